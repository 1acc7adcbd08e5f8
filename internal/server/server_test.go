package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

const (
	keyAcme   = "key-acme"
	keyGlobex = "key-globex"
	keyAdmin  = "key-admin"
)

// approvalScenario is the acceptance scenario whose write needs CONFIRM:
// its skill, scripted tools and model turns drive the server's sessions.
const approvalScenario = "examples/scenarios/acceptance/08-confirmed-write-succeeds.yaml"

type fixture struct {
	srv   *server.Server
	ts    *httptest.Server
	tools *tscripted.Server
}

// newFixture serves the approval scenario's agent to two tenants, with an
// admin key and a plugin host for the admin API.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return buildFixture(t, fixtureSetup{})
}

// fixtureSetup changes what buildFixture serves.
type fixtureSetup struct {
	// contract rewrites each skill contract (JSON) before it is parsed.
	contract func(string) string
	// tools replaces the scenario's scripted tools.
	tools *tscripted.Server
	// skipTurns starts each session's scripted model that many turns in,
	// as a model that already answered them would go on.
	skipTurns int
	// turns, when set, are each session's model turns instead.
	turns []mscripted.Turn
	// options changes the server's options last.
	options func(*server.Options)
}

func buildFixture(t *testing.T, fs fixtureSetup) *fixture {
	t.Helper()
	sc, err := scenario.Load(filepath.Join(testdata.Root(), approvalScenario))
	if err != nil {
		t.Fatal(err)
	}
	var skills []*skillstore.Skill
	for _, sk := range sc.Skills {
		if fs.contract != nil {
			sk.Contract = []byte(fs.contract(string(sk.Contract)))
		}
		c, _, err := contract.Parse(sk.SkillKey, sk.Contract)
		if err != nil {
			t.Fatal(err)
		}
		skills = append(skills, &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: sk.SkillKey, SkillName: sk.SkillName,
			SkillManual: sk.Manual, SkillContract: string(sk.Contract)}, Contract: c, ToolNames: sk.ToolNames})
	}
	var ts []tscripted.Tool
	for _, st := range sc.Tools.Scripted {
		ts = append(ts, tscripted.Tool{Tool: tools.Tool{Name: st.Name, Description: st.Description, InputSchema: st.Schema},
			Write: st.Write, Handler: tscripted.Fixed(string(st.Responses[0]))})
	}
	toolSrv := tscripted.New(nil, ts...)
	if fs.tools != nil {
		toolSrv = fs.tools
	}
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	agent := server.Agent{Profile: sc.Agent, Skills: skills}
	opts := server.Options{
		Keys:      map[string]string{keyAcme: "acme", keyGlobex: "globex"},
		AdminKeys: []string{keyAdmin},
		Agents: agentsFunc(func(context.Context, string) (server.Agent, error) {
			return agent, nil
		}),
		Tools: toolSrv,
		NewModel: func(string, string) (model.Model, error) {
			if fs.turns != nil {
				return mscripted.New(fs.turns)
			}
			return mscripted.New(sc.Model[fs.skipTurns:])
		},
		Loop:   loop.DefaultConfig(),
		Host:   h,
		Logger: slog.New(slog.NewTextHandler(tlog{t}, nil)),
	}
	if fs.options != nil {
		fs.options(&opts)
	}
	native(&opts)
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(hs.Close)
	return &fixture{srv: srv, ts: hs, tools: toolSrv}
}

// native gives o the first-party plugins in-process (package plugins'),
// unless it has its own or a plugin directory; the env builtin reads o.Now.
func native(o *server.Options) {
	if o.Plugins != "" {
		return
	}
	if o.Guards == nil {
		o.Guards = chain.NativeGuards()
	}
	if o.Builtins == nil {
		now := o.Now
		if now == nil {
			now = time.Now
		}
		o.Builtins = loop.NativeBuiltins(now)
	}
}

type agentsFunc func(ctx context.Context, tenant string) (server.Agent, error)

func (f agentsFunc) Agent(ctx context.Context, tenant string) (server.Agent, error) {
	return f(ctx, tenant)
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (f *fixture) do(t *testing.T, method, path, key, body string, out any) (int, server.ErrorBody) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb server.ErrorBody
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
			t.Fatalf("%s %s: %d with a body that is not an error: %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, eb
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, eb
}

func (f *fixture) session(t *testing.T, key string) string {
	t.Helper()
	var s server.SessionInfo
	if code, eb := f.do(t, "POST", "/v1/sessions", key, "", &s); code != http.StatusCreated {
		t.Fatalf("create session: %d %+v", code, eb)
	}
	return s.ID
}

// suspend opens a session and posts the scenario's message, which ends
// with the write held for approval.
func (f *fixture) suspend(t *testing.T) (session string, res server.RunResult) {
	t.Helper()
	sid := f.session(t, keyAcme)
	code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`, &res)
	if code != http.StatusOK {
		b, _ := json.MarshalIndent(res, "", " ")
		t.Fatalf("message: %d %+v %s", code, eb, b)
	}
	return sid, res
}

func TestSessionApprovalFlow(t *testing.T) {
	f := newFixture(t)
	sid, res := f.suspend(t)
	if res.Task.Status != "SUSPENDED" || res.Task.Suspension == nil || res.Task.Suspension.Kind != "APPROVAL" {
		t.Fatalf("task after message = %+v", res.Task)
	}
	if res.Approval == nil || res.Approval.ID != res.Task.Approval || res.Approval.Tool != "create_site" ||
		res.Approval.Status != "PENDING" || res.Approval.ArgsDigest == "" {
		t.Fatalf("approval = %+v", res.Approval)
	}
	if !hasEvent(res.Events, "TOOL", "create_site", "DEFERRED", "APPROVAL_REQUIRED") {
		t.Fatalf("no DEFERRED create_site in %+v", res.Events)
	}
	for _, e := range res.Events {
		if e.Kind == loop.KindTool && e.Tool == "create_site" && e.Label != "创建网站" {
			t.Fatalf("create_site event label = %q", e.Label)
		}
	}
	if n := f.tools.Count("create_site"); n != 0 {
		t.Fatalf("create_site called %d times before CONFIRM", n)
	}
	// A new message while the task waits is refused.
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages", keyAcme, `{"text":"再建一个"}`, nil); code != http.StatusConflict || eb.Error.Code != server.CodeTaskPending {
		t.Fatalf("message while suspended: %d %s", code, eb.Error.Code)
	}

	var done server.RunResult
	if code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK {
		t.Fatalf("CONFIRM: %d %+v", code, eb)
	}
	if done.Task.Status != "DONE" || done.Task.Output != "网站 Spring Launch 已创建" {
		t.Fatalf("task after CONFIRM = %+v", done.Task)
	}
	if !hasEvent(done.Events, "TOOL", "create_site", "SUCCESS", "") {
		t.Fatalf("no successful create_site in %+v", done.Events)
	}
	if n := f.tools.Count("create_site"); n != 1 {
		t.Fatalf("create_site called %d times, want 1", n)
	}

	// Single use: a second answer of any kind is refused and runs nothing.
	for _, d := range []string{"CONFIRM", "REJECT"} {
		code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"`+d+`"}`, nil)
		if code != http.StatusConflict || eb.Error.Code != server.CodeApprovalUsed {
			t.Fatalf("second %s: %d %s", d, code, eb.Error.Code)
		}
	}
	if n := f.tools.Count("create_site"); n != 1 {
		t.Fatalf("create_site called %d times after a second CONFIRM", n)
	}
	var ap server.Approval
	f.do(t, "GET", "/v1/approvals/"+res.Approval.ID, keyAcme, "", &ap)
	if ap.Status != "CONFIRM" || ap.Answered == nil {
		t.Fatalf("approval after CONFIRM = %+v", ap)
	}

	// The trace holds the task's events in order, message and answer.
	var trace struct {
		Task   string         `json:"task"`
		Events []server.Event `json:"events"`
	}
	f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &trace)
	if len(trace.Events) != len(res.Events)+len(done.Events) {
		t.Fatalf("trace has %d events, the runs %d+%d", len(trace.Events), len(res.Events), len(done.Events))
	}
	for i := 1; i < len(trace.Events); i++ {
		if trace.Events[i].Seq <= trace.Events[i-1].Seq {
			t.Fatalf("trace out of order at %d", i)
		}
	}
	// A finished task takes no answer.
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/follow-up", keyAcme, `{"answer":"x"}`, nil); code != http.StatusConflict || eb.Error.Code != server.CodeNotSuspended {
		t.Fatalf("follow-up on a done task: %d %s", code, eb.Error.Code)
	}
}

func TestRejectCancelsTheTask(t *testing.T) {
	f := newFixture(t)
	_, res := f.suspend(t)
	var out server.RunResult
	if code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"REJECT"}`, &out); code != http.StatusOK {
		t.Fatalf("REJECT: %d %+v", code, eb)
	}
	if out.Task.Status != "CANCELLED" || f.tools.Count("create_site") != 0 {
		t.Fatalf("after REJECT: task %+v, create_site calls %d", out.Task, f.tools.Count("create_site"))
	}
}

func TestTenantIsolation(t *testing.T) {
	f := newFixture(t)
	sid, res := f.suspend(t)
	ap := res.Approval.ID
	tests := []struct {
		name, method, path, body string
		code                     string
	}{
		{"read session", "GET", "/v1/sessions/" + sid, "", server.CodeSessionNotFound},
		{"post message", "POST", "/v1/sessions/" + sid + "/messages", `{"text":"hi"}`, server.CodeSessionNotFound},
		{"read task", "GET", "/v1/sessions/" + sid + "/tasks/t1", "", server.CodeSessionNotFound},
		{"read trace", "GET", "/v1/sessions/" + sid + "/tasks/t1/trace", "", server.CodeSessionNotFound},
		{"stream events", "GET", "/v1/sessions/" + sid + "/events", "", server.CodeSessionNotFound},
		{"answer follow-up", "POST", "/v1/sessions/" + sid + "/tasks/t1/follow-up", `{"answer":"x"}`, server.CodeSessionNotFound},
		{"answer verify", "POST", "/v1/sessions/" + sid + "/tasks/t1/verify", `{"took":true}`, server.CodeSessionNotFound},
		{"read approval", "GET", "/v1/approvals/" + ap, "", server.CodeApprovalNotFound},
		{"CONFIRM approval", "POST", "/v1/approvals/" + ap, `{"decision":"CONFIRM"}`, server.CodeApprovalNotFound},
		{"CANCEL approval", "POST", "/v1/approvals/" + ap, `{"decision":"CANCEL"}`, server.CodeApprovalNotFound},
		{"unknown session", "GET", "/v1/sessions/s_unknown", "", server.CodeSessionNotFound},
		{"unknown approval", "GET", "/v1/approvals/ap_unknown", "", server.CodeApprovalNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, tt.method, tt.path, keyGlobex, tt.body, nil)
			if code != http.StatusNotFound || eb.Error.Code != tt.code {
				t.Fatalf("got %d %s, want 404 %s", code, eb.Error.Code, tt.code)
			}
		})
	}
	// Nothing the other tenant did touched the approval.
	var a server.Approval
	f.do(t, "GET", "/v1/approvals/"+ap, keyAcme, "", &a)
	if a.Status != "PENDING" || f.tools.Count("create_site") != 0 {
		t.Fatalf("after the other tenant: approval %s, create_site calls %d", a.Status, f.tools.Count("create_site"))
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t)
	sid := f.session(t, keyAcme)
	msgs := "/v1/sessions/" + sid + "/messages"
	tests := []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"no auth", "POST", "/v1/sessions", "", "", 401, server.CodeUnauthorized},
		{"unknown key", "POST", "/v1/sessions", "nope", "", 401, server.CodeUnauthorized},
		{"admin key on tenant API", "POST", "/v1/sessions", keyAdmin, "", 401, server.CodeUnauthorized},
		{"bad JSON", "POST", msgs, keyAcme, `{"text":`, 400, server.CodeBadJSON},
		{"not an object", "POST", msgs, keyAcme, `["hi"]`, 400, server.CodeBadJSON},
		{"two values", "POST", msgs, keyAcme, `{"text":"a"}{"text":"b"}`, 400, server.CodeBadJSON},
		{"empty body", "POST", msgs, keyAcme, ``, 400, server.CodeBadJSON},
		{"unknown field", "POST", msgs, keyAcme, `{"text":"hi","approved":true}`, 400, server.CodeUnknownField},
		{"missing text", "POST", msgs, keyAcme, `{}`, 400, server.CodeInvalidRequest},
		{"too large", "POST", msgs, keyAcme, `{"text":"` + strings.Repeat("x", 2<<20) + `"}`, 413, server.CodeBodyTooLarge},
		{"unknown task", "GET", "/v1/sessions/" + sid + "/tasks/t9", keyAcme, "", 404, server.CodeTaskNotFound},
		{"verify: took not a bool", "POST", "/v1/sessions/" + sid + "/tasks/t9/verify", keyAcme, `{"took":"yes"}`, 400, server.CodeBadJSON},
		{"verify of an unknown task", "POST", "/v1/sessions/" + sid + "/tasks/t9/verify", keyAcme, `{}`, 404, server.CodeTaskNotFound},
		{"resume of an unknown task", "POST", "/v1/sessions/" + sid + "/tasks/t9/resume", keyAcme, ``, 404, server.CodeTaskNotFound},
		{"resume with a body", "POST", "/v1/sessions/" + sid + "/tasks/t9/resume", keyAcme, `{"force":true}`, 400, server.CodeUnknownField},
		{"bad SSE cursor", "GET", "/v1/sessions/" + sid + "/events?after=x", keyAcme, "", 400, server.CodeInvalidRequest},
		{"no route", "GET", "/v2/nothing", keyAcme, "", 404, server.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, tt.method, tt.path, tt.key, tt.body, nil)
			if code != tt.status || eb.Error.Code != tt.code {
				t.Fatalf("got %d %s (%s), want %d %s", code, eb.Error.Code, eb.Error.Message, tt.status, tt.code)
			}
		})
	}
	// None of the refused requests started a task.
	var s server.SessionInfo
	f.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", &s)
	if len(s.Tasks) != 0 {
		t.Fatalf("refused requests left tasks: %+v", s.Tasks)
	}

	// A client cannot assert an approval: the decision is all it may send.
	_, res := f.suspend(t)
	for _, tt := range []struct{ name, body, code string }{
		{"args asserted", `{"decision":"CONFIRM","args":{"title":"x"}}`, server.CodeUnknownField},
		{"digest asserted", `{"decision":"CONFIRM","argsDigest":"00"}`, server.CodeUnknownField},
		{"unknown decision", `{"decision":"APPROVE"}`, server.CodeInvalidRequest},
		{"lower-case decision", `{"decision":"confirm"}`, server.CodeInvalidRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, tt.body, nil)
			if code != 400 || eb.Error.Code != tt.code {
				t.Fatalf("got %d %s, want 400 %s", code, eb.Error.Code, tt.code)
			}
		})
	}
	var a server.Approval
	f.do(t, "GET", "/v1/approvals/"+res.Approval.ID, keyAcme, "", &a)
	if a.Status != "PENDING" {
		t.Fatalf("refused decisions used the approval: %s", a.Status)
	}
}

func TestHealth(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _ := f.do(t, "GET", p, "", "", nil); code != 200 {
			t.Fatalf("%s: %d", p, code)
		}
	}
	f.srv.SetReady(false)
	if code, eb := f.do(t, "GET", "/readyz", "", "", nil); code != 503 || eb.Error.Code != "not_ready" {
		t.Fatalf("readyz while draining: %d %s", code, eb.Error.Code)
	}
}

// TestEventStream follows a session's events while a message and its
// approval run: the stream delivers every event once, in order, with the
// tools' labels, the same as the runs answered.
func TestEventStream(t *testing.T) {
	f := newFixture(t)
	sid := f.session(t, keyAcme)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/v1/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var (
		mu  sync.Mutex
		got []server.Event
		ids []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				mu.Lock()
				ids = append(ids, strings.TrimPrefix(line, "id: "))
				mu.Unlock()
			case strings.HasPrefix(line, "data: "):
				var e server.Event
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e) == nil {
					mu.Lock()
					got = append(got, e)
					mu.Unlock()
				}
			}
		}
	}()
	var r1, r2 server.RunResult
	f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`, &r1)
	f.do(t, "POST", "/v1/approvals/"+r1.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, &r2)
	want := append(append([]server.Event{}, r1.Events...), r2.Events...)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("stream delivered %d of %d events", n, len(want))
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("stream delivered %d events, the runs %d", len(got), len(want))
	}
	labelled := false
	for i := range want {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d: stream %s, run %s", i, a, b)
		}
		if ids[i] != jsonInt(want[i].Seq) {
			t.Fatalf("event %d: id %s, seq %d", i, ids[i], want[i].Seq)
		}
		labelled = labelled || (got[i].Tool == "query_space" && got[i].Label == "查询空间")
	}
	if !labelled {
		t.Fatal("no query_space event carried its label")
	}

	// A reconnect with Last-Event-ID gets only what came after.
	req, _ = http.NewRequestWithContext(context.Background(), "GET", f.ts.URL+"/v1/sessions/"+sid+"/events", nil)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	req = req.WithContext(ctx2)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	req.Header.Set("Last-Event-ID", jsonInt(want[len(want)-2].Seq))
	resp2, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	sc := bufio.NewScanner(resp2.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "id: ") {
			if line != "id: "+jsonInt(want[len(want)-1].Seq) {
				t.Fatalf("resumed stream sent %s", line)
			}
			break
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func hasEvent(evs []server.Event, kind, tool, outcome, name string) bool {
	for _, e := range evs {
		if string(e.Kind) == kind && e.Tool == tool && e.Outcome == outcome && (name == "" || e.Name == name) {
			return true
		}
	}
	return false
}

// tlog sends the server's log to the test's.
type tlog struct{ t *testing.T }

func (l tlog) Write(b []byte) (int, error) { l.t.Log(strings.TrimSpace(string(b))); return len(b), nil }

// TestConcurrentConfirm: many CONFIRMs of one approval at once run the
// write once; every other answer is refused with 409.
func TestConcurrentConfirm(t *testing.T) {
	f := newFixture(t)
	_, res := f.suspend(t)
	const n = 8
	codes := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, nil)
			codes <- http.StatusText(code) + " " + eb.Error.Code
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		switch c {
		case "OK ":
			ok++
		case "Conflict " + server.CodeApprovalUsed, "Conflict " + server.CodeSessionBusy:
		default:
			t.Fatalf("unexpected answer %q", c)
		}
	}
	if ok != 1 || f.tools.Count("create_site") != 1 {
		t.Fatalf("%d CONFIRMs succeeded, create_site called %d times; want 1 and 1", ok, f.tools.Count("create_site"))
	}
}
