package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// TestServeTwoInstances runs two warden serve processes on one PostgreSQL
// database with forwarding off: the session belongs to the instance that
// created it, the other refuses it naming that instance, and once the owner
// stops (SIGTERM) the other takes the session over and answers its
// approval.
func TestServeTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	dsn := sqltest.DSN(t, sqlstore.Postgres) // skips without a PostgreSQL
	warden := buildBin(t, "warden", ".")
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin, "-http", "127.0.0.1:0")
	skills, keys := killFixture(t)
	dir := t.TempDir()
	scriptA := filepath.Join(dir, "a.json")
	writeFile(t, scriptA, `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create shop.example.com","toolName":"create_website"}}]}]`)
	scriptB := filepath.Join(dir, "b.json")
	writeFile(t, scriptB, `[
		{"expect":{"tool":"create_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]}]`)
	serving := regexp.MustCompile(`serving on (http://\S+)`)
	args := func(name, script string) []string {
		return []string{"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", "postgres:" + dsn,
			"--instance", name, "--lease", "2s", "--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL,
			"--forward=false"}
	}

	a, baseA := start(t, serving, warden, args("warden-a", scriptA)...)
	b, baseB := start(t, serving, warden, args("warden-b", scriptB)...)
	var sess struct{ ID string }
	if code := apiCall(t, baseA, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
		t.Fatalf("create session on a: %d", code)
	}
	var res struct {
		Task     struct{ Status string }
		Approval struct{ ID string }
	}
	if code := apiCall(t, baseA, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"create the website Shop with domain shop.example.com in space sp-1"}`, &res); code != 200 ||
		res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
		t.Fatalf("message on a: %d %+v\n%s", code, res, a.out.String())
	}
	// Either instance lists both, with their leases and the sessions they
	// own, from the database.
	var inst struct {
		Instances []struct {
			ID         string  `json:"id"`
			LeaseUntil *string `json:"lease_until"`
			Sessions   int     `json:"sessions"`
			Self       bool    `json:"self"`
		} `json:"instances"`
	}
	if code := apiCall(t, baseB, "GET", "/admin/v1/instances", adminKey, "", &inst); code != 200 || len(inst.Instances) != 2 ||
		inst.Instances[0].ID != "warden-a" || inst.Instances[0].Self || inst.Instances[0].Sessions != 1 || inst.Instances[0].LeaseUntil == nil ||
		inst.Instances[1].ID != "warden-b" || !inst.Instances[1].Self || inst.Instances[1].LeaseUntil == nil {
		t.Fatalf("instances on b: %d %+v", code, inst)
	}
	var refused struct {
		Error struct{ Code, Message string }
	}
	if code := apiCall(t, baseB, "POST", "/v1/approvals/"+res.Approval.ID, tenantKey, `{"decision":"CONFIRM"}`, &refused); code != 409 ||
		refused.Error.Code != "session_elsewhere" || !strings.Contains(refused.Error.Message, "warden-a") {
		t.Fatalf("CONFIRM on b while a serves: %d %+v", code, refused)
	}

	// a stops as an orchestrator stops it; its lease ends with it.
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-a.done
	var done struct {
		Task struct{ Status, Output string }
	}
	if code := apiCall(t, baseB, "POST", "/v1/approvals/"+res.Approval.ID, tenantKey, `{"decision":"CONFIRM"}`, &done); code != 200 ||
		done.Task.Status != "DONE" || done.Task.Output != "shop.example.com created" {
		t.Fatalf("CONFIRM on b after a stopped: %d %+v\n%s", code, done, b.out.String())
	}
	if !b.shows(`"msg":"session taken over"`) {
		t.Fatalf("b did not log the take-over:\n%s", b.out.String())
	}
	cms, err := mcp.Dial(context.Background(), mcp.Config{URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	r, err := cms.CallTool(context.Background(), "admin_stats", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Data struct{ Calls map[string]int } `json:"data"`
	}
	if err := json.Unmarshal(r.Content, &st); err != nil || st.Data.Calls["create_website"] != 1 {
		t.Fatalf("create_website calls: %+v %v", st.Data.Calls, err)
	}
}
