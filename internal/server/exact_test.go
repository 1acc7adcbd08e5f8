package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools/mcp"
	"github.com/agentwarden/warden/loop"
)

// TestApprovalExactIDs: ids no float64 holds, from an MCP server (the
// go-sdk's server side, over stdio and streamable HTTP), reach the API's approval, its
// question and the confirmed write as the server sent them.
func TestApprovalExactIDs(t *testing.T) {
	t.Parallel()
	root := testdata.Root()
	bin := filepath.Join(t.TempDir(), "mcporders")
	build := exec.Command("go", "build", "-o", bin, "./internal/testdata/mcporders")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build mcporders: %v\n%s", err, out)
	}
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			cfg := mcp.Config{Name: "orders", Command: []string{bin}}
			if tr == "http" {
				cfg = mcp.Config{Name: "orders", URL: testdata.OrdersHTTP(t, bin)}
			}
			approvalExactIDs(t, root, cfg)
		})
	}
}

func approvalExactIDs(t *testing.T, root string, cfg mcp.Config) {
	f, hs := ordersServe(t, filepath.Join(root, "examples/scenarios/exact/order-id-to-write.yaml"), cfg)

	raw := func(method, path, body string) string {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+keyAcme)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	sid := f.session(t, keyAcme)
	var res server.RunResult
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"Cancel my order."}`, &res); code != http.StatusOK {
		t.Fatalf("message: %d %+v", code, eb)
	}
	if res.Approval == nil {
		t.Fatalf("no approval: %+v", res.Task)
	}
	// The model's memo keeps its <, > and &; the server's note keeps the
	// escapes its SDK wrote.
	const args = `{"ticket":987654321098765432109876543210,"memo":"<b>A & B</b>","note":"\u003cb\u003eA \u0026 B\u003c/b\u003e","orderId":1234567890123456789,"refund":123456789012345678901234567890}`
	ap := raw("GET", "/v1/approvals/"+res.Approval.ID, "")
	for _, want := range []string{`"args":` + args, `1234567890123456789`, `123456789012345678901234567890`} {
		if !strings.Contains(ap, want) {
			t.Fatalf("approval lacks %s:\n%s", want, ap)
		}
	}
	if strings.Contains(ap, "e+") || strings.Contains(ap, "1234567890123456800") {
		t.Fatalf("approval holds a rounded number:\n%s", ap)
	}
	for _, want := range []string{"Order：1234567890123456789\n", "Refund：123456789012345678901234567890", "Ticket：987654321098765432109876543210\n"} {
		if !strings.Contains(res.Approval.Question, want) {
			t.Fatalf("question %q lacks %q", res.Approval.Question, want)
		}
	}
	done := raw("POST", "/v1/approvals/"+res.Approval.ID, `{"decision":"CONFIRM"}`)
	if !strings.Contains(done, `"status":"DONE"`) {
		t.Fatalf("after CONFIRM:\n%s", done)
	}
	trace := raw("GET", "/v1/sessions/"+sid+"/tasks/t1/trace", "")
	// The confirmed call's input is what was sent to the server (its echo
	// cannot show it: the server's SDK escapes <, > and & again).
	quoted, _ := abi.Marshal(args)
	if want := `"call":"approved_call_2_1","input":` + string(quoted); !strings.Contains(trace, want) {
		t.Fatalf("the confirmed write's arguments are not in the trace as sent; want %s in\n%s", want, trace)
	}
	for _, want := range []string{`\"orderId\":1234567890123456789`, `\"refund\":123456789012345678901234567890`} {
		if !strings.Contains(trace, `\"received\":`) || !strings.Contains(trace[strings.Index(trace, `\"received\":`):], want) {
			t.Fatalf("the server's echo lacks %s:\n%s", want, trace)
		}
	}
}

// ordersServe serves a scenario file's agent and model turns over the API,
// its tools from the MCP server cfg reaches.
func ordersServe(t *testing.T, file string, cfg mcp.Config) (*fixture, *httptest.Server) {
	t.Helper()
	sc, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	orders, err := mcp.Dial(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orders.Close() })
	var skills []*skillstore.Skill
	for _, sk := range sc.Skills {
		c, _, err := contract.Parse(sk.SkillKey, sk.Contract)
		if err != nil {
			t.Fatal(err)
		}
		skills = append(skills, &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: sk.SkillKey, SkillName: sk.SkillName,
			SkillManual: sk.Manual, SkillContract: string(sk.Contract)}, Contract: c, ToolNames: sk.ToolNames})
	}
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	agent := server.Agent{Profile: sc.Agent, Skills: skills}
	srv, err := server.New(server.Options{
		Guards: chain.NativeGuards(), Builtins: loop.NativeBuiltins(time.Now),
		Keys:   map[string]string{keyAcme: "acme"},
		Agents: agentsFunc(func(context.Context, string) (server.Agent, error) { return agent, nil }),
		Tools:  orders,
		NewModel: func(string, string) (model.Model, error) {
			return mscripted.New(sc.Model)
		},
		Loop:   loop.DefaultConfig(),
		Host:   h,
		Logger: slog.New(slog.NewTextHandler(tlog{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(hs.Close)
	return &fixture{srv: srv, ts: hs}, hs
}

// TestLateToolOverAPI: a session's node is offered a tool its MCP server
// added during a call (tools/list_changed), and reads a resource link with
// resources_read; the session was opened before the tool existed.
func TestLateToolOverAPI(t *testing.T) {
	t.Parallel()
	root := testdata.Root()
	bin := filepath.Join(t.TempDir(), "mcporders")
	build := exec.Command("go", "build", "-o", bin, "./internal/testdata/mcporders")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build mcporders: %v\n%s", err, out)
	}
	f, _ := ordersServe(t, filepath.Join(root, "examples/scenarios/exact/late-tool-and-resource.yaml"), mcp.Config{Name: "orders", Command: []string{bin}})
	sid := f.session(t, keyAcme)
	var res server.RunResult
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"Where is my order?"}`, &res); code != http.StatusOK {
		t.Fatalf("message: %d %+v", code, eb)
	}
	if res.Task.Status != "DONE" {
		t.Fatalf("task %+v\nevents %+v", res.Task, res.Events)
	}
	for _, tool := range []string{"track_order", "resources_read"} {
		if !hasEvent(res.Events, "TOOL", tool, "SUCCESS", "") {
			t.Fatalf("no successful %s in %+v", tool, res.Events)
		}
	}
}
