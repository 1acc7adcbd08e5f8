package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/tools/mcp"
)

// buildBin builds a main package into the test's temporary directory.
func buildBin(t *testing.T, name, pkg string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// serveStart bounds a serve's start in the tests: it loads the ten
// first-party wasm modules, whose compilation, when the shared cache does
// not have it yet (their sources changed), takes a minute or more on a
// loaded machine.
const serveStart = 3 * time.Minute

// proc is a child process whose output is scanned for a line.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// shows reports whether the process's output holds s, waiting a bounded
// time for it: the output reaches the buffer through a pipe copied by
// another goroutine, so a line printed before an answer can arrive after.
func (p *proc) shows(s string) bool {
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.out.String(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// start runs bin and waits until its output (stdout and stderr) matches
// ready; it returns the first submatch. The process is killed when the
// test ends.
func start(t *testing.T, ready *regexp.Regexp, bin string, args ...string) (*proc, string) {
	t.Helper()
	return startEnv(t, nil, ready, bin, args...)
}

// startEnv is start with env added to the process's environment.
func startEnv(t *testing.T, env []string, ready *regexp.Regexp, bin string, args ...string) (*proc, string) {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	for deadline := time.Now().Add(serveStart); ; time.Sleep(20 * time.Millisecond) {
		if m := ready.FindStringSubmatch(p.out.String()); m != nil {
			return p, m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", filepath.Base(bin), p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start: %s", filepath.Base(bin), p.out.String())
		}
	}
}

// killFixture is a skill store whose one skill creates a website, held for
// approval, verified by find_website (CONTRACT_SPEC §14.3).
func killFixture(t *testing.T) (skills, keys string) {
	t.Helper()
	dir := t.TempDir()
	skills = filepath.Join(dir, "skills")
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"agent_profile.yaml":       "- {id: 1, agent_code: cms, agent_name: CMS, status: ACTIVE}\n",
		"agent_skill_binding.yaml": "- {agent_id: 1, skill_id: 20, enabled_flag: 1}\n",
		"skill_tool_binding.yaml":  "- {skill_id: 20, tool_name: find_website, enabled_flag: 1}\n- {skill_id: 20, tool_name: create_website, enabled_flag: 1}\n",
		"skill_profile.yaml": `- id: 20
  skill_key: cms.website
  skill_name: Website creation
  skill_manual: Create the website the user asks for.
  skill_contract:
    tools:
      find_website:
        label: Find a website
        success: {path: code, op: EQ, value: 200}
      create_website:
        label: Create a website
        sideEffect: WRITE
        idempotencyKey: [domain]
        timeoutMs: 60000
        success: {path: code, op: EQ, value: 200}
        error: {code: code, message: msg}
        verify: {tool: find_website, args: {domain: {from: call.domain}}}
  status: ACTIVE
`,
	} {
		writeFile(t, filepath.Join(skills, name), body)
	}
	keys = filepath.Join(dir, "keys.json")
	writeFile(t, keys, `{"tenants":[{"tenant":"acme","agent":"cms","keys":["`+tenantKey+`"]}],"admin_keys":["`+adminKey+`"]}`)
	return skills, keys
}

// TestKillMidWrite kills a real warden serve (SIGKILL) while a confirmed
// write is in flight on the example MCP server, whose write takes effect
// and never answers. A new process on the same SQLite file finds the write
// UNKNOWN_PRE_CALL and the task waiting for VERIFY; the verify tool
// settles it and the task finishes. The MCP server saw the write once.
func TestKillMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	warden := buildBin(t, "warden", ".")
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin,
		"-http", "127.0.0.1:0", "-commit-timeout-next", "1", "-fault-tool", "create_website")
	skills, keys := killFixture(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "warden.db")
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, body)
		return p
	}
	first := script("first.json", `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create shop.example.com","toolName":"create_website"}}]}]`)
	// The second process's model reads the verify tool's verdict.
	second := script("second.json", `[
		{"expect":{"tool":"find_website","contains":"已核实"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]}]`)
	serving := regexp.MustCompile(`serving on (http://\S+)`)
	args := func(script string) []string {
		return []string{"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", "sqlite:" + db,
			"--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL, "--lease", "2s"}
	}

	a, base := start(t, serving, warden, args(first)...)
	var sess struct{ ID string }
	if code := apiCall(t, base, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
		t.Fatalf("create session: %d", code)
	}
	var res struct {
		Task     struct{ Status string }
		Approval struct{ ID string }
	}
	if code := apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"create the website Shop with domain shop.example.com in space sp-1"}`, &res); code != 200 ||
		res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
		t.Fatalf("message: %d %+v\n%s", code, res, a.out.String())
	}
	// CONFIRM: the write runs, takes effect on the MCP server and hangs.
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/approvals/"+res.Approval.ID, strings.NewReader(`{"decision":"CONFIRM"}`))
		req.Header.Set("Authorization", "Bearer "+tenantKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	ctx := context.Background()
	cms, err := mcp.Dial(ctx, mcp.Config{URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	writes := func() int {
		t.Helper()
		r, err := cms.CallTool(ctx, "admin_stats", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Data struct{ Calls map[string]int } `json:"data"`
		}
		if err := json.Unmarshal(r.Content, &st); err != nil {
			t.Fatalf("admin_stats: %v: %s", err, r.Content)
		}
		return st.Data.Calls["create_website"]
	}
	for deadline := time.Now().Add(20 * time.Second); writes() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the write never reached the MCP server:\n%s", a.out.String())
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done

	restarted := time.Now()
	b, base := start(t, serving, warden, args(second)...)
	ready := time.Since(restarted)
	var task struct {
		Status     string
		Suspension *struct {
			Kind, Tool string
		}
	}
	if code := apiCall(t, base, "GET", "/v1/sessions/"+sess.ID+"/tasks/t1", tenantKey, "", &task); code != 200 || task.Status != "SUSPENDED" ||
		task.Suspension == nil || task.Suspension.Kind != "VERIFY" || task.Suspension.Tool != "create_website" {
		t.Fatalf("task after restart: %d %+v\n%s", code, task, b.out.String())
	}
	if !b.shows("UNKNOWN_PRE_CALL") {
		t.Fatalf("no recovery logged:\n%s", b.out.String())
	}
	var done struct {
		Task struct{ Status, Output string }
	}
	verifyStart := time.Now()
	code := apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/tasks/t1/verify", tenantKey, `{}`, &done)
	t.Logf("restart to serving, with the write recovered: %v; verify and finish: %v", ready.Round(time.Millisecond), time.Since(verifyStart).Round(time.Millisecond))
	if code != 200 ||
		done.Task.Status != "DONE" || done.Task.Output != "shop.example.com created" {
		t.Fatalf("verify: %d %+v\n%s", code, done, b.out.String())
	}
	if n := writes(); n != 1 {
		t.Fatalf("the MCP server saw %d writes, want 1", n)
	}
	r, err := cms.CallTool(ctx, "list_websites", json.RawMessage(`{"spaceId":"sp-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(r.Content), `"shop.example.com"`); n != 1 {
		t.Fatalf("shop.example.com exists %d times: %s", n, r.Content)
	}
}
