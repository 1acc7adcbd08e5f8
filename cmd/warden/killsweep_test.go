package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// The crash sweep kills a real warden serve (SIGKILL) at every step of a
// confirmed write, from the CONFIRM to the task's DONE saved, and proves
// two properties at each: the example MCP server saw the write at most
// once, and after a restart the session is usable — the task reaches DONE
// through whatever the API offers then (approve again, verify, resume, or
// nothing when recovery ended it), and a new message on the same session
// runs a new task, with an approval of its own, to DONE.
//
// A step is a change to the durable state, a tool call or its return (see
// killpoint.go, built with -tags killpoints): the durable state only
// changes at steps, so killing before each one reaches every state a
// crash can leave, the narrow ones included (after the node's DONE and
// before the task's). Points inside the write (a kill while the MCP server
// is still on the call) are added by time, on a write slowed by the
// server's fault injection.

// sweepScripts are the model's turns: the first process asks for the
// approval and, in the recording run, finishes after the write; after a
// restart the model finishes the first task and runs the second.
const (
	sweepFirst = `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create shop.example.com","toolName":"create_website"}}]},
		{"expect":{"tool":"create_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]}]`
	// After a restart the scripted model numbers its calls from 1 again, so
	// a call id can name an earlier process's call too: the expectations
	// read the tool message's text, not the outcome found by id.
	//
	// The probe process only recovers and shows the state: its model is
	// never asked.
	sweepProbe = `[{"fail":"the probe process must not run the model"}]`
	// The first task after a restart, whatever the API offered to go on:
	// the model calls the write again (the ledger answers it with the
	// earlier success, or it runs under the CONFIRM the user gave when it
	// never ran) and finishes. Either way its answer says the write
	// succeeded ("成功").
	sweepRest = `
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","contains":"成功"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]}`
	// The first task after a restart that cut its message short: the
	// model asks for the write again, and finishes once it is confirmed.
	sweepAgain = `
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","contains":"该写操作须经用户确认"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create shop.example.com","toolName":"create_website"}}]},
		{"expect":{"tool":"create_website","contains":"成功"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]}`
	// The second task: a write of its own, held for approval.
	sweepNext = `
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Blog","domain":"blog.example.com"}}]},
		{"expect":{"tool":"create_website","contains":"该写操作须经用户确认"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create blog.example.com","toolName":"create_website"}}]},
		{"expect":{"tool":"create_website","contains":"调用成功"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"blog.example.com created"}}]}`
	sweepShop = `{"text":"create the website Shop with domain shop.example.com in space sp-1"}`
	sweepBlog = `{"text":"create the website Blog with domain blog.example.com in space sp-1"}`
)

// sweepWriteDelay slows the write for the points killed by time inside it.
const sweepWriteDelay = 300 * time.Millisecond

// sweepWriteTimeout is the write's timeoutMs in the sweep, ten times its
// delay: until the write's start plus this, a verification that finds
// nothing is too early (409 verify_too_early), so it bounds how long a
// point where the write was never sent waits for VERIFY.
const sweepWriteTimeout = 3 * time.Second

var (
	killpointLine = regexp.MustCompile(`(?m)^killpoint (\d+) (\S+)$`)
	servingLine   = regexp.MustCompile(`serving on (http://\S+)`)
	listeningLine = regexp.MustCompile(`listening on (http://\S+)`)
)

type killStep struct {
	n    int
	name string
}

// killPoint is where one run dies: before step n, or after (a duration
// after step n began), of the message that asks for the approval or of the
// CONFIRM.
type killPoint struct {
	step    killStep
	after   time.Duration
	confirm bool
}

func (p killPoint) spec() string {
	if p.after > 0 {
		return fmt.Sprintf("%d+%v", p.step.n, p.after)
	}
	return strconv.Itoa(p.step.n)
}

func (p killPoint) String() string {
	s := fmt.Sprintf("message/%02d_%s", p.step.n, p.step.name)
	if p.confirm {
		s = fmt.Sprintf("confirm/%02d_%s", p.step.n, p.step.name)
	}
	if p.after > 0 {
		s += "+" + p.after.String()
	}
	return s
}

type sweep struct {
	warden, cms, skills, keys string
	first, probe, rest, next  string
	// again is the model after a restart that interrupted the message:
	// the write is asked for again, then confirmed.
	again string
	// firstAsk is the message's first step, its task's save: a process
	// killed there never took the message.
	firstAsk int
}

func TestKillSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	stores := []string{"sqlite"}
	switch {
	case os.Getenv(pgTestURL) != "":
		stores = append(stores, "postgres")
	case os.Getenv("CI") == "true":
		t.Fatal(pgTestURL + " must be set under CI=true: the sweep runs on PostgreSQL too")
	}
	sw := &sweep{
		warden: buildBin(t, "warden", ".", "-tags", "killpoints"),
		cms:    buildBin(t, "mcp-cms", "../../examples/mcp-cms"),
	}
	sw.skills, sw.keys = killFixture(t)
	prof := filepath.Join(sw.skills, "skill_profile.yaml")
	src, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "timeoutMs: 60000") {
		t.Fatal("the kill fixture's write has no timeoutMs: 60000 to shorten")
	}
	writeFile(t, prof, strings.Replace(string(src), "timeoutMs: 60000", fmt.Sprintf("timeoutMs: %d", sweepWriteTimeout.Milliseconds()), 1))
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, body)
		return p
	}
	sw.first = script("first.json", sweepFirst)
	sw.probe = script("probe.json", sweepProbe)
	sw.rest = script("rest.json", "["+sweepRest+","+sweepNext+"]")
	sw.next = script("next.json", "["+sweepNext+"]")
	sw.again = script("again.json", "["+sweepAgain+","+sweepNext+"]")

	asking, confirming := sw.record(t)
	sw.firstAsk = asking[0].n
	points := sweepPoints(t, asking, confirming)
	t.Logf("%d kill points per store: %d steps of the message, %d from CONFIRM to the task saved, and %d inside the write",
		len(points), len(asking), len(confirming), len(points)-len(asking)-len(confirming))
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			for _, p := range points {
				t.Run(p.String(), func(t *testing.T) {
					t.Parallel()
					sw.point(t, st, p)
				})
			}
		})
	}
}

// sweepPoints is a point before every step of the message and of the
// CONFIRM, and points by time inside the write. It checks that the steps
// cover the window the sweep is for: the write, its settling, the node's
// DONE, and the task's DONE saved after it.
func sweepPoints(t *testing.T, asking, steps []killStep) []killPoint {
	t.Helper()
	idx := func(name string, from int) int {
		for i := from; i < len(steps); i++ {
			if steps[i].name == name {
				return i
			}
		}
		t.Fatalf("no step %s after step %d in %v", name, from, steps)
		return -1
	}
	write := idx("tool.create_website", 0)
	last := len(steps) - 1
	if steps[last].name != "dir.PutTask:done" {
		t.Fatalf("the last step after CONFIRM is %v, want the task saved", steps[last])
	}
	// The node's DONE is builtin_node_finish's effects, the last ones
	// applied before the task's status: the window after it, up to the
	// task's save, is where a crash used to wedge the session.
	taskDone := idx("state.SetTaskStatus", write)
	nodeDone := -1
	for i := write; i < taskDone; i++ {
		if steps[i].name == "state.Apply" {
			nodeDone = i
		}
	}
	if nodeDone < 0 || idx("dir.PutTask", taskDone) >= last || taskDone-nodeDone < 2 {
		t.Fatalf("no window between the node's DONE and the task's save in %v", steps)
	}
	if len(asking) == 0 || asking[0].name != "dir.PutTask" || asking[len(asking)-1].name != "dir.PutTask:done" {
		t.Fatalf("the message's steps %v do not end with the task saved", asking)
	}
	var points []killPoint
	for _, s := range asking {
		points = append(points, killPoint{step: s})
	}
	for _, s := range steps {
		points = append(points, killPoint{step: s, confirm: true})
	}
	for _, d := range []time.Duration{sweepWriteDelay / 3, sweepWriteDelay * 2 / 3} {
		points = append(points, killPoint{step: steps[write], after: d, confirm: true})
	}
	return points
}

// storeArg is a new, empty store of the kind for one run.
func storeArg(t *testing.T, kind string) string {
	t.Helper()
	if kind == "postgres" {
		return "postgres:" + sqltest.DSN(t, sqlstore.Postgres)
	}
	return "sqlite:" + filepath.Join(t.TempDir(), "warden.db")
}

func (sw *sweep) args(storeArg, script, mcpURL string) []string {
	// A long lease: the periodic recovery sweep must not interleave its
	// steps with the run's.
	return []string{"serve", "--addr", "127.0.0.1:0", "--skills", sw.skills, "--keys", sw.keys, "--store", storeArg,
		"--instance", "warden-sweep", "--lease", "60s",
		"--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL, "--log-level", "debug",
		// One instance: nothing to forward to.
		"--forward=false"}
}

// record runs the confirmed write once without dying, printing its
// steps, and returns those of the message and those from the CONFIRM on.
func (sw *sweep) record(t *testing.T) (asking, confirming []killStep) {
	t.Helper()
	_, mcpURL := start(t, listeningLine, sw.cms, "-http", "127.0.0.1:0")
	a, base := startEnv(t, []string{killpointEnv + "=trace"}, servingLine, sw.warden, sw.args(storeArg(t, "sqlite"), sw.first, mcpURL)...)
	sess := sweepSession(t, a, base)
	created := len(parseSteps(t, a.out.String()))
	ap := sweepAsk(t, a, base, sess)
	asked := len(settledSteps(t, a, created))
	var res struct{ Task struct{ Status string } }
	if code := apiCall(t, base, "POST", "/v1/approvals/"+ap, tenantKey, `{"decision":"CONFIRM"}`, &res); code != 200 || res.Task.Status != "DONE" {
		t.Fatalf("CONFIRM in the recording run: %d %+v\n%s", code, res, a.out.String())
	}
	all := settledSteps(t, a, asked)
	if len(all) <= asked {
		t.Fatalf("no step after CONFIRM:\n%s", a.out.String())
	}
	return all[created:asked], all[asked:]
}

// settledSteps is the process's steps once those of a request answered
// after step from have all been read. The task's save is printed before
// the answer is written, but the process's output reaches the test's
// buffer through a pipe copied by another goroutine, so the last lines can
// lag the answer: it waits, up to a bound, for the save to show.
func settledSteps(t *testing.T, p *proc, from int) []killStep {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		steps := parseSteps(t, p.out.String())
		if len(steps) > from && steps[len(steps)-1].name == "dir.PutTask:done" || time.Now().After(deadline) {
			return steps
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func parseSteps(t *testing.T, out string) []killStep {
	t.Helper()
	var steps []killStep
	for _, m := range killpointLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		if n != len(steps)+1 {
			t.Fatalf("step %d printed after step %d:\n%s", n, len(steps), out)
		}
		steps = append(steps, killStep{n: n, name: m[2]})
	}
	return steps
}

func sweepSession(t *testing.T, p *proc, base string) string {
	t.Helper()
	var sess struct{ ID string }
	if code := apiCall(t, base, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
		t.Fatalf("create session: %d\n%s", code, p.out.String())
	}
	return sess.ID
}

// sweepAsk posts the message whose write is held; it returns the approval.
func sweepAsk(t *testing.T, p *proc, base, sess string) string {
	t.Helper()
	var res struct {
		Task     struct{ Status string }
		Approval struct{ ID string }
	}
	if code := apiCall(t, base, "POST", "/v1/sessions/"+sess+"/messages?wait=5m", tenantKey, sweepShop, &res); code != 200 ||
		res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
		t.Fatalf("message: %d %+v\n%s", code, res, p.out.String())
	}
	return res.Approval.ID
}

// sweepDie sends a request the process is to die during.
func sweepDie(t *testing.T, p *proc, base, path, body string, at killPoint) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tenantKey)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("POST %s answered %d: the process was to die at %s\n%s", path, resp.StatusCode, at.spec(), p.out.String())
	}
}

// sweepTask is a task as the API shows it, with what the sweep reads.
type sweepTask struct {
	Status     string
	Approval   string
	Output     string
	Suspension *struct{ Kind, Tool string }
}

func (tk sweepTask) String() string {
	s := tk.Status
	if tk.Suspension != nil {
		s += "/" + tk.Suspension.Kind
	}
	return s
}

// point kills a process at p, restarts, and checks both properties.
func (sw *sweep) point(t *testing.T, kind string, p killPoint) {
	ctx := context.Background()
	cmsArgs := []string{"-http", "127.0.0.1:0"}
	if p.after > 0 {
		cmsArgs = append(cmsArgs, "-fault-tool", "create_website", "-delay", sweepWriteDelay.String())
	}
	_, mcpURL := start(t, listeningLine, sw.cms, cmsArgs...)
	cms, err := mcp.Dial(ctx, mcp.Config{URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	st := storeArg(t, kind)

	// The first process dies at the point, during the CONFIRM.
	a, base := startEnv(t, []string{killpointEnv + "=" + p.spec()}, servingLine, sw.warden, sw.args(st, sw.first, mcpURL)...)
	sess := sweepSession(t, a, base)
	if p.confirm {
		ap := sweepAsk(t, a, base, sess)
		sweepDie(t, a, base, "/v1/approvals/"+ap, `{"decision":"CONFIRM"}`, p)
	} else {
		sweepDie(t, a, base, "/v1/sessions/"+sess+"/messages?wait=5m", sweepShop, p)
	}
	select {
	case <-a.done:
	case <-time.After(time.Minute):
		t.Fatalf("the process did not die at %s\n%s", p.spec(), a.out.String())
	}
	if ws, ok := a.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the process ended with %v, not SIGKILL\n%s", a.cmd.ProcessState, a.out.String())
	}
	if want := fmt.Sprintf("killpoint %d %s: SIGKILL", p.step.n, p.step.name); !strings.Contains(a.out.String(), want) {
		t.Fatalf("the process did not die at step %d %s (the steps changed since the recording?)\n%s", p.step.n, p.step.name, a.out.String())
	}
	if p.after > 0 {
		// The MCP server goes on with a call whose client died, and the
		// website appears once its delay is over. The restart does not
		// wait for it: a verification while the tool is still on the
		// write finds nothing, which before the write's start plus its
		// timeout is no verdict (409 verify_too_early), so the write is
		// not made again (see RATIONALE, "Crash safety as a property").
		t.Logf("the write had landed before the restart: %v", sweepHas(t, cms, "shop.example.com"))
		// The rest of the run writes at full speed.
		if _, err := cms.CallTool(ctx, "admin_set_faults", json.RawMessage(`{"delayMs":0}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, most := sweepWrites(t, cms), map[bool]int{false: 0, true: 1}[p.confirm]; n > most {
		t.Fatalf("the MCP server saw %d writes before the restart, want at most %d", n, most)
	}

	// A probe process recovers and shows what the API offers; the model
	// the next process needs depends on it.
	pr, pbase := start(t, servingLine, sw.warden, sw.args(st, sw.probe, mcpURL)...)
	var after sweepTask
	code := apiCall(t, pbase, "GET", "/v1/sessions/"+sess+"/tasks/t1", tenantKey, "", &after)
	switch {
	case code == 404 && !p.confirm && p.step.n == sw.firstAsk:
		// The process died before the message's task was stored: the
		// message was never taken, and is sent again.
		after.Status = "NEVER"
	case code != 200:
		t.Fatalf("task after restart: %d\n%s", code, pr.out.String())
	}
	if err := pr.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-pr.done
	t.Logf("after restart: t1 %s; the MCP server saw %d writes", after, sweepWrites(t, cms))

	script := sw.rest
	switch {
	case after.Status == "DONE":
		script = sw.next
	case after.Status == "NEVER" || after.Status == "RUNNING" && !p.confirm:
		script = sw.again
	}
	b, base := start(t, servingLine, sw.warden, sw.args(st, script, mcpURL)...)
	t1 := "/v1/sessions/" + sess + "/tasks/t1"
	var res struct {
		Task     sweepTask
		Approval struct{ ID string }
	}
	switch {
	case after.Status == "NEVER":
		ap := sweepAsk(t, b, base, sess)
		code = apiCall(t, base, "POST", "/v1/approvals/"+ap, tenantKey, `{"decision":"CONFIRM"}`, &res)
	case after.Status == "DONE":
		code = apiCall(t, base, "GET", t1, tenantKey, "", &res.Task)
	case after.Status == "SUSPENDED" && after.Suspension != nil && after.Suspension.Kind == "APPROVAL":
		var a struct{ Status string }
		if c := apiCall(t, base, "GET", "/v1/approvals/"+after.Approval, tenantKey, "", &a); c != 200 || a.Status != "PENDING" {
			t.Fatalf("t1 waits for approval %q, which is %d %+v: nobody can answer it\n%s", after.Approval, c, a, b.out.String())
		}
		code = apiCall(t, base, "POST", "/v1/approvals/"+after.Approval, tenantKey, `{"decision":"CONFIRM"}`, &res)
	case after.Status == "SUSPENDED" && after.Suspension != nil && after.Suspension.Kind == "VERIFY":
		var early int
		code, early = sweepVerify(t, base, t1, &res)
		t.Logf("verify: %d answers too early before %d", early, code)
	case after.Status == "RUNNING" && !p.confirm:
		// The message was cut before the approval was asked: resume
		// asks it, and the user confirms.
		if c := apiCall(t, base, "POST", t1+"/resume", tenantKey, `{}`, &res); c != 200 || res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
			t.Fatalf("resume of t1 cut during its message: %d %+v\n%s", c, res, b.out.String())
		}
		code = apiCall(t, base, "POST", "/v1/approvals/"+res.Approval.ID, tenantKey, `{"decision":"CONFIRM"}`, &res)
	case after.Status == "RUNNING":
		code = apiCall(t, base, "POST", t1+"/resume", tenantKey, `{}`, &res)
	default:
		t.Fatalf("t1 after restart is %s: the API offers no way on\n%s", after, b.out.String())
	}
	if code != 200 || res.Task.Status != "DONE" || res.Task.Output != "shop.example.com created" {
		t.Fatalf("t1 (%s after restart) went on to %d %s %q\n%s", after, code, res.Task, res.Task.Output, b.out.String())
	}

	// The session takes a new message, whose own write is approved.
	res = struct {
		Task     sweepTask
		Approval struct{ ID string }
	}{}
	if code := apiCall(t, base, "POST", "/v1/sessions/"+sess+"/messages?wait=5m", tenantKey, sweepBlog, &res); code != 200 ||
		res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
		t.Fatalf("new message after restart: %d %+v\n%s", code, res, b.out.String())
	}
	if code := apiCall(t, base, "POST", "/v1/approvals/"+res.Approval.ID, tenantKey, `{"decision":"CONFIRM"}`, &res); code != 200 ||
		res.Task.Status != "DONE" || res.Task.Output != "blog.example.com created" {
		t.Fatalf("CONFIRM of the new task: %d %+v\n%s", code, res, b.out.String())
	}
	if n := sweepWrites(t, cms); n != 2 {
		t.Fatalf("the MCP server saw %d writes, want 2: each website once", n)
	}
	r, err := cms.CallTool(ctx, "list_websites", json.RawMessage(`{"spaceId":"sp-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"shop.example.com", "blog.example.com"} {
		if n := strings.Count(string(r.Content), `"`+d+`"`); n != 1 {
			t.Fatalf("%s exists %d times: %s", d, n, r.Content)
		}
	}
}

// sweepVerify asks the verify tool to settle the write t1 waits on,
// again while the answer is 409 verify_too_early (the write may still be
// on the MCP server's call), within the write's timeout and a margin. It
// returns the last status, decoded into out, and how many answers were
// too early. Each one must carry a Retry-After within the write's timeout.
func sweepVerify(t *testing.T, base, t1 string, out any) (code, early int) {
	t.Helper()
	for deadline := time.Now().Add(sweepWriteTimeout + 20*time.Second); ; early++ {
		req, err := http.NewRequest("POST", base+t1+"/verify", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tenantKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb struct{ Error struct{ Code string } }
		if resp.StatusCode != http.StatusConflict || json.Unmarshal(b, &eb) != nil || eb.Error.Code != "verify_too_early" {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("verify: %d %s", resp.StatusCode, b)
			}
			return resp.StatusCode, early
		}
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || wait < 1 || time.Duration(wait)*time.Second > sweepWriteTimeout+time.Second {
			t.Fatalf("verify too early with Retry-After %q: %s", resp.Header.Get("Retry-After"), b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("verify still too early after the write's timeout: %s", b)
		}
		// Found counts at once: ask again soon rather than after the
		// whole Retry-After.
		time.Sleep(100 * time.Millisecond)
	}
}

// sweepWrites is how many times the MCP server was asked to create a
// website.
func sweepWrites(t *testing.T, cms *mcp.Client) int {
	t.Helper()
	r, err := cms.CallTool(context.Background(), "admin_stats", json.RawMessage(`{}`))
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

// sweepHas reports whether the MCP server holds a website of the domain.
func sweepHas(t *testing.T, cms *mcp.Client, domain string) bool {
	t.Helper()
	r, err := cms.CallTool(context.Background(), "list_websites", json.RawMessage(`{"spaceId":"sp-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(r.Content), `"`+domain+`"`)
}
