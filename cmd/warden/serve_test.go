package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store/sqlstore"
)

const (
	tenantKey = "acme-key-0123456789"
	adminKey  = "admin-key-0123456789"
)

// serveFixture writes a skill store with one skill over mcp-cms's
// query_space, a keys file and a model script.
func serveFixture(t *testing.T) (skills, keys, script string) {
	t.Helper()
	dir := t.TempDir()
	skills = filepath.Join(dir, "skills")
	files := map[string]string{
		"agent_profile.yaml":       "- {id: 1, agent_code: cms, agent_name: CMS, status: ACTIVE}\n",
		"agent_skill_binding.yaml": "- {agent_id: 1, skill_id: 10, enabled_flag: 1}\n",
		"skill_tool_binding.yaml":  "- {skill_id: 10, tool_name: query_space, enabled_flag: 1}\n",
		"skill_profile.yaml": `- id: 10
  skill_key: cms.space
  skill_name: Space lookup
  skill_manual: Look the space up.
  skill_contract:
    tools:
      query_space:
        label: Look up a space
        success: {path: code, op: EQ, value: 200}
  status: ACTIVE
`,
	}
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(skills, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keys = filepath.Join(dir, "keys.json")
	writeFile(t, keys, `{"tenants":[{"tenant":"acme","agent":"cms","keys":["`+tenantKey+`"]}],"admin_keys":["`+adminKey+`"]}`)
	script = filepath.Join(dir, "script.json")
	writeFile(t, script, `[{"tool_calls":[{"name":"query_space","arguments":{"spaceId":"sp-1"}}]},
		{"expect":{"tool":"query_space","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"found Marketing"}}]}]`)
	return skills, keys, script
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeEndToEnd starts warden serve against the example MCP server,
// runs one message through the API, then stops it as SIGTERM would.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	bin := filepath.Join(t.TempDir(), "mcp-cms")
	build := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	skills, keys, script := serveFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- cmdServe(ctx, []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
			"--model-script", script, "--tools", "mcp-command", "--mcp-command", bin, "--shutdown-grace", "2s"}, &stdout, &stderr)
	}()
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	var base string
	for deadline := time.Now().Add(serveStart); base == ""; {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	call := func(method, path, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, _ := call("GET", "/healthz", "", ""); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	if code, out := call("POST", "/v1/sessions", "", ""); code != 401 || out["error"].(map[string]any)["code"] != "unauthorized" {
		t.Fatalf("no key: %d %v", code, out)
	}
	code, sess := call("POST", "/v1/sessions", tenantKey, "")
	if code != 201 {
		t.Fatalf("create session: %d %v", code, sess)
	}
	code, res := call("POST", "/v1/sessions/"+sess["id"].(string)+"/messages?wait=5m", tenantKey, `{"text":"find space sp-1"}`)
	if code != 200 {
		t.Fatalf("message: %d %v", code, res)
	}
	task := res["task"].(map[string]any)
	if task["status"] != "DONE" || task["output"] != "found Marketing" {
		t.Fatalf("task = %v", task)
	}
	labelled := false
	for _, e := range res["events"].([]any) {
		ev := e.(map[string]any)
		labelled = labelled || (ev["tool"] == "query_space" && ev["label"] == "Look up a space")
	}
	if !labelled {
		t.Fatalf("no labelled query_space event in %v", res["events"])
	}
	// The first-party plugins run as wasm by default, each named once at
	// start with its generation and digest.
	// Each digest names the first-party module bound to the slot's
	// plugin; the module's own digest is the same for every slot.
	for _, s := range traceSlots {
		if n := strings.Count(stderr.String(), `"msg":"plugin","slot":"`+s.slot+`","generation":1,"digest":"sha256:`); n != 1 {
			t.Errorf("the log names %s %d times, want once as wasm:\n%s", s.slot, n, stderr.String())
		}
	}
	if n := strings.Count(stderr.String(), `"runtime":"wasm","module":"sha256:`+host.Digest(testSet(t).Shared)+`"`); n != len(traceSlots) {
		t.Errorf("the log names the first-party module %d times, want %d:\n%s", n, len(traceSlots), stderr.String())
	}
	// The run shows in the metrics.
	resp, err := metricsGet(base)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`warden_loop_tool_calls_total{code="",outcome="SUCCESS",tenant="acme",tool="query_space"} 1`,
		`warden_loop_tasks_finished_total{status="DONE",tenant="acme"} 1`,
		`warden_http_requests_total{code="200",route="POST /v1/sessions/{session}/messages"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("metrics lack %s:\n%s", want, metrics)
		}
	}

	cancel()
	select {
	case code := <-exited:
		if code != 0 || !strings.Contains(stdout.String(), "warden: stopped") {
			t.Fatalf("serve exited %d: %s %s", code, stdout.String(), stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeRefusesUnservedTool: an agent whose skill names a tool the MCP
// server does not serve fails at start, naming --skills.
func TestServeRefusesUnservedTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	bin := filepath.Join(t.TempDir(), "mcp-cms")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms").CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	skills, keys, script := serveFixture(t)
	writeFile(t, filepath.Join(skills, "skill_tool_binding.yaml"), "- {skill_id: 10, tool_name: archive_article, enabled_flag: 1}\n")
	var stdout, stderr bytes.Buffer
	code := cmdServe(context.Background(), []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
		"--model-script", script, "--tools", "mcp-command", "--mcp-command", bin}, &stdout, &stderr)
	want := "warden serve: --skills (WARDEN_SKILLS): tenant acme: server: skill cms.space: toolNames[0]: tool archive_article is not served by the agent's MCP servers\n"
	if code != 1 || !strings.HasSuffix(stderr.String(), want) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeStoreOpenErrors: a database that cannot be opened or is newer
// than the build stops warden serve at start, naming --store, before any
// tool server is started.
func TestServeStoreOpenErrors(t *testing.T) {
	skills, keys, script := serveFixture(t)
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	db, err := sqlstore.Open(context.Background(), sqlstore.SQLite, newer)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'now')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	have, _ := sqlstore.SchemaVersion(sqlstore.SQLite)
	missing := filepath.Join(dir, "no-such-dir", "w.db")
	tests := []struct{ store, want string }{
		{"sqlite:" + newer, fmt.Sprintf("warden serve: --store (WARDEN_STORE): sqlstore: migrate: database at version 999, this build knows %d: database schema is newer than this build\n", have)},
		{"sqlite:" + missing, "warden serve: --store (WARDEN_STORE): sqlstore: migrate: unable to open database file (14)\n"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := cmdServe(context.Background(), []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
			"--model-script", script, "--tools", "mcp-command", "--mcp-command", "no-such-mcp-server", "--store", tt.store}, &stdout, &stderr)
		if code != 1 || stderr.String() != tt.want {
			t.Fatalf("--store %s: exit %d, stderr %q\nwant %q", tt.store, code, stderr.String(), tt.want)
		}
	}
}

// startServe runs cmdServe with args until the returned stop is called;
// it returns the API's base URL. The start is given serveStart:
// with --plugins on a cold compilation cache it compiles ten modules.
func startServe(t *testing.T, args []string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- cmdServe(ctx, args, &stdout, &stderr) }()
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	for deadline := time.Now().Add(serveStart); ; time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-exited:
			cancel()
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", stderr.String())
		}
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-exited:
			if code != 0 || !strings.Contains(stdout.String(), "warden: stopped") {
				t.Errorf("serve exited %d: %s %s", code, stdout.String(), stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop")
		}
	}
	t.Cleanup(stop)
	return base, stop
}

// TestServeDurableStore runs a message to a held write with --store
// sqlite:FILE, stops the server, starts a second one on the same file and
// checks that the session's task and node, suspended on the approval,
// are still in the store.
func TestServeDurableStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	bin := filepath.Join(t.TempDir(), "mcp-cms")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms").CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	skills, keys, script := serveFixture(t)
	writeFile(t, filepath.Join(skills, "skill_tool_binding.yaml"),
		"- {skill_id: 10, tool_name: query_space, enabled_flag: 1}\n- {skill_id: 10, tool_name: create_website, enabled_flag: 1}\n")
	writeFile(t, filepath.Join(skills, "skill_profile.yaml"), `- id: 10
  skill_key: cms.site
  skill_name: Site builder
  skill_manual: Look the space up, then create the website.
  skill_contract:
    tools:
      query_space:
        label: Look up a space
        success: {path: code, op: EQ, value: 200}
      create_website:
        label: Create a website
        sideEffect: WRITE
        idempotencyKey: [domain]
        success: {path: code, op: EQ, value: 200}
  status: ACTIVE
`)
	writeFile(t, script, `[{"tool_calls":[{"name":"query_space","arguments":{"spaceId":"sp-1"}}]},
		{"expect":{"tool":"query_space","outcome":"SUCCESS"},"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Spring","domain":"spring.example"}}]},
		{"expect":{"tool":"create_website","outcome":"DEFERRED","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create website Spring in sp-1","toolName":"create_website"}}]}]`)
	file := filepath.Join(t.TempDir(), "w.db")
	args := []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
		"--model-script", script, "--tools", "mcp-command", "--mcp-command", bin, "--shutdown-grace", "2s", "--store", "sqlite:" + file}

	base, stop := startServe(t, args)
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tenantKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, sess := call("POST", "/v1/sessions", "")
	if code != 201 {
		t.Fatalf("create session: %d %v", code, sess)
	}
	sid := sess["id"].(string)
	code, res := call("POST", "/v1/sessions/"+sid+"/messages?wait=5m", `{"text":"create website Spring in sp-1 on spring.example"}`)
	if code != 200 {
		t.Fatalf("message: %d %v", code, res)
	}
	task := res["task"].(map[string]any)
	taskID, nodeID, apID := task["id"].(string), task["node"].(string), task["approval"].(string)
	if task["status"] != "SUSPENDED" || apID == "" || nodeID == "" {
		t.Fatalf("task = %v", task)
	}
	code, ap := call("GET", "/v1/approvals/"+apID, "")
	if code != 200 || ap["status"] != "PENDING" || ap["argsDigest"] == "" {
		t.Fatalf("approval: %d %v", code, ap)
	}
	stop()

	// A second process on the same file: it opens and recovers it, and
	// the held session is still there.
	_, stop2 := startServe(t, args)
	stop2()
	db, err := sqlstore.Open(context.Background(), sqlstore.SQLite, file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Session(context.Background(), state.Options{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := st.Task(taskID)
	if err != nil {
		t.Fatalf("task after restart: %v", err)
	}
	n, err := st.Node(nodeID)
	if err != nil {
		t.Fatalf("node after restart: %v", err)
	}
	if tk.Status != state.Suspended || n.Status != state.Suspended || n.Suspension == nil ||
		n.Suspension.Kind != abi.SuspendApproval || n.Gated == nil || n.Gated.Tool != "create_website" ||
		n.Gated.ArgsDigest != ap["argsDigest"] {
		t.Fatalf("after restart: task %s, node %s, suspension %+v, gated %+v; approval %v", tk.Status, n.Status, n.Suspension, n.Gated, ap)
	}
	// The held write never ran, so nothing was STARTED and nothing recovered.
	ledger, err := st.Ledger(taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ledger {
		if e.State == abi.LedgerStarted || e.State == abi.LedgerUnknownPreCall {
			t.Fatalf("ledger entry %+v", e)
		}
	}
}
