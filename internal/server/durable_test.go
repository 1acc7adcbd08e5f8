package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

// clock is a settable clock shared by the instances of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

const lease = 10 * time.Second

// instance serves the approval scenario as one instance on db.
func instance(t *testing.T, db *sqlstore.DB, name string, c *clock, fs fixtureSetup) *fixture {
	t.Helper()
	more := fs.options
	fs.options = func(o *server.Options) {
		o.Directory, o.Instance, o.Lease, o.Now = db, name, lease, c.Now
		o.NewStore = func(_ string, opt state.Options) (state.Store, error) {
			return db.Session(context.Background(), opt)
		}
		o.Recoverable = db.SessionsWithStartedWrites
		if more != nil {
			more(o)
		}
	}
	return buildFixture(t, fs)
}

func forDialects(t *testing.T, run func(t *testing.T, db *sqlstore.DB)) {
	for _, d := range sqltest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			run(t, sqltest.Open(t, d))
		})
	}
}

// An approval outlives the process that asked for it: another process on
// the same database answers it, once, and the task finishes there.
func TestApprovalAfterRestart(t *testing.T) {
	t.Parallel()
	forDialects(t, func(t *testing.T, db *sqlstore.DB) {
		c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
		a := instance(t, db, "a", c, fixtureSetup{})
		sid, res := a.suspend(t)
		ap := res.Approval
		a.ts.Close()
		a.srv.Close()

		// Three turns were answered by the first process's model.
		b := instance(t, db, "b", c, fixtureSetup{skipTurns: 3})
		var got server.Approval
		if code, eb := b.do(t, "GET", "/v1/approvals/"+ap.ID, keyAcme, "", &got); code != http.StatusOK ||
			got.Status != "PENDING" || got.ArgsDigest != ap.ArgsDigest || got.Session != sid {
			t.Fatalf("approval after restart: %d %+v %+v", code, eb, got)
		}
		if code, eb := b.do(t, "GET", "/v1/approvals/"+ap.ID, keyGlobex, "", nil); code != http.StatusNotFound || eb.Error.Code != server.CodeApprovalNotFound {
			t.Fatalf("another tenant: %d %+v", code, eb)
		}
		var done server.RunResult
		if code, eb := b.do(t, "POST", "/v1/approvals/"+ap.ID, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK ||
			done.Task.Status != "DONE" || done.Task.Output != "网站 Spring Launch 已创建" {
			t.Fatalf("CONFIRM after restart: %d %+v %+v", code, eb, done.Task)
		}
		if code, eb := b.do(t, "POST", "/v1/approvals/"+ap.ID, keyAcme, `{"decision":"CONFIRM"}`, nil); code != http.StatusConflict || eb.Error.Code != server.CodeApprovalUsed {
			t.Fatalf("second CONFIRM: %d %+v", code, eb)
		}
		if n := b.tools.Count("create_site"); n != 1 {
			t.Fatalf("create_site called %d times", n)
		}
		// The trace runs on across both processes, numbered without a gap.
		var trace struct {
			Events []server.Event `json:"events"`
		}
		b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &trace)
		for i, e := range trace.Events {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, e.Seq)
			}
		}
		if n := len(trace.Events); n < len(res.Events)+3 || !hasEvent(trace.Events, "TOOL", "create_site", "DEFERRED", "APPROVAL_REQUIRED") ||
			!hasEvent(trace.Events, "TOOL", "create_site", "SUCCESS", "") {
			t.Fatalf("trace after restart: %+v", trace.Events)
		}
		var info server.SessionInfo
		if b.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", &info); len(info.Tasks) != 1 || info.Tasks[0].Status != "DONE" {
			t.Fatalf("session after restart: %+v", info)
		}
	})
}

// A session belongs to one live instance at a time: another refuses it
// with session_elsewhere, and takes it over once the owner has stopped.
func TestSessionOwnership(t *testing.T) {
	t.Parallel()
	forDialects(t, func(t *testing.T, db *sqlstore.DB) {
		c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
		a := instance(t, db, "a", c, fixtureSetup{})
		b := instance(t, db, "b", c, fixtureSetup{skipTurns: 3})
		ctx := context.Background()
		for _, f := range []*fixture{a, b} {
			if err := f.srv.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		sid, res := a.suspend(t)
		code, eb := b.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", nil)
		if code != http.StatusConflict || eb.Error.Code != server.CodeSessionElsewhere || !strings.Contains(eb.Error.Message, "instance a") {
			t.Fatalf("session on b while a lives: %d %+v", code, eb)
		}
		if code, eb := b.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, nil); code != http.StatusConflict || eb.Error.Code != server.CodeSessionElsewhere {
			t.Fatalf("CONFIRM on b while a lives: %d %+v", code, eb)
		}
		if code, eb := b.do(t, "GET", "/v1/sessions/"+sid, keyGlobex, "", nil); code != http.StatusNotFound || eb.Error.Code != server.CodeSessionNotFound {
			t.Fatalf("another tenant on b: %d %+v", code, eb)
		}
		// a stops: its lease ends and b answers for the session.
		a.srv.Close()
		var done server.RunResult
		if code, eb := b.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
			t.Fatalf("CONFIRM on b after a stopped: %d %+v %+v", code, eb, done.Task)
		}
		// b's lease holds the session now, even for a that restarts.
		a2 := instance(t, db, "a", c, fixtureSetup{})
		if err := a2.srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if code, eb := a2.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", nil); code != http.StatusConflict || eb.Error.Code != server.CodeSessionElsewhere {
			t.Fatalf("session on a restarted a while b lives: %d %+v", code, eb)
		}
		// b dies without a word: once its lease has run out, a2 takes the
		// session over.
		c.Add(2 * lease)
		var info server.SessionInfo
		if code, eb := a2.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", &info); code != http.StatusOK || len(info.Tasks) != 1 || info.Tasks[0].Status != "DONE" {
			t.Fatalf("session on a2 after b died: %d %+v %+v", code, eb, info)
		}
	})
}

// An instance dies while a confirmed write is in flight. Once its lease
// has run out another instance recovers the session at start: the write
// is UNKNOWN_PRE_CALL, the task waits for VERIFY, and the write is never
// sent again; the user's answer settles it.
func TestTakeOverMidWrite(t *testing.T) {
	t.Parallel()
	forDialects(t, func(t *testing.T, db *sqlstore.DB) {
		c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
		// The write tool takes the call and never answers (until the test
		// ends); its contract gives it a minute.
		started := make(chan struct{}, 1)
		hang := make(chan struct{})
		schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["title","spaceId"],"properties":{"title":{"type":"string"},"spaceId":{"type":"integer"}}}`)
		writes := tscripted.New(nil,
			tscripted.Tool{Tool: tools.Tool{Name: "query_space", InputSchema: json.RawMessage(`{"type":"object","properties":{"spaceName":{"type":"string"}}}`)},
				Handler: tscripted.Fixed(`{"code":200,"msg":"ok","data":{"spaces":[{"id":42,"name":"市场部"}]}}`)},
			tscripted.Tool{Tool: tools.Tool{Name: "query_site", InputSchema: json.RawMessage(`{"type":"object"}`)},
				Handler: tscripted.Fixed(`{"code":200,"data":{"sites":[]}}`)},
			tscripted.Tool{Tool: tools.Tool{Name: "create_site", InputSchema: schema}, Write: true,
				Handler: func(*tscripted.State, json.RawMessage) (json.RawMessage, error) {
					started <- struct{}{}
					<-hang
					return json.RawMessage(`{"code":200,"msg":"ok","data":{"id":"site_7"}}`), nil
				}})
		slow := func(s string) string { return strings.ReplaceAll(s, `"timeoutMs":100`, `"timeoutMs":60000`) }
		quiet := func(o *server.Options) { o.Logger = slog.New(slog.DiscardHandler) }
		a := instance(t, db, "a", c, fixtureSetup{contract: slow, tools: writes, options: quiet})
		// Cleanups run last first: the hung call ends before a's listener
		// closes, which waits for it.
		t.Cleanup(func() { close(hang) })
		actx, kill := context.WithCancel(context.Background())
		if err := a.srv.Start(actx); err != nil {
			t.Fatal(err)
		}
		sid, res := a.suspend(t)
		go func() {
			req, _ := http.NewRequest("POST", a.ts.URL+"/v1/approvals/"+res.Approval.ID, strings.NewReader(`{"decision":"CONFIRM"}`))
			req.Header.Set("Authorization", "Bearer "+keyAcme)
			if resp, err := a.ts.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-started
		// a is gone: it renews its lease no more and says nothing.
		kill()
		c.Add(2 * lease)

		// b's model reads the interrupted call's answer, then finishes.
		finish := []mscripted.Turn{{Expect: &mscripted.Expect{Tool: "create_site", Contains: "没有返回结果"},
			ToolCalls: []mscripted.Call{{Name: "builtin_node_finish", Arguments: `{"output":"网站 Spring Launch 已创建"}`}}}}
		b := instance(t, db, "b", c, fixtureSetup{contract: slow, tools: writes, turns: finish})
		if err := b.srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		var task server.Task
		if code, eb := b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK ||
			task.Status != "SUSPENDED" || task.Suspension == nil || task.Suspension.Kind != "VERIFY" || task.Suspension.Tool != "create_site" {
			t.Fatalf("task on b: %d %+v %+v", code, eb, task)
		}
		// No verify tool is configured: only the user can say.
		if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/verify", keyAcme, `{}`, nil); code != http.StatusConflict || eb.Error.Code != server.CodeNoVerifyTool {
			t.Fatalf("verify without a verify tool: %d %+v", code, eb)
		}
		var done server.RunResult
		if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/verify", keyAcme, `{"took":true}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
			t.Fatalf("verify answered: %d %+v %+v", code, eb, done)
		}
		if n := writes.Count("create_site"); n != 1 {
			t.Fatalf("create_site sent %d times", n)
		}
		if !hasEvent(done.Events, "RESUME", "create_site", "", "") {
			t.Fatalf("no VERIFY resume in %+v", done.Events)
		}
	})
}

// The instance that died sent a write the tool server is still on. The
// instance that takes over must not read "not found" before the write's
// call could have finished (start plus its timeoutMs) as "did not happen":
// verify answers 409 verify_too_early with Retry-After, for the verify
// tool's {} and for the user's {"took":false} alike, and changes nothing;
// once the write has landed, verify finds it and the task is DONE.
func TestVerifyTooEarlyAfterTakeOver(t *testing.T) {
	t.Parallel()
	forDialects(t, func(t *testing.T, db *sqlstore.DB) {
		start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
		c := &clock{t: start}
		started := make(chan struct{}, 1)
		hang := make(chan struct{})
		var landed atomic.Bool
		schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["title","spaceId"],"properties":{"title":{"type":"string"},"spaceId":{"type":"integer"}}}`)
		writes := tscripted.New(nil,
			tscripted.Tool{Tool: tools.Tool{Name: "query_space", InputSchema: json.RawMessage(`{"type":"object","properties":{"spaceName":{"type":"string"}}}`)},
				Handler: tscripted.Fixed(`{"code":200,"msg":"ok","data":{"spaces":[{"id":42,"name":"市场部"}]}}`)},
			tscripted.Tool{Tool: tools.Tool{Name: "query_site", InputSchema: json.RawMessage(`{"type":"object"}`)},
				Handler: func(*tscripted.State, json.RawMessage) (json.RawMessage, error) {
					if landed.Load() {
						return json.RawMessage(`{"code":200,"data":{"sites":[{"id":"site_7","title":"Spring Launch"}]}}`), nil
					}
					return json.RawMessage(`{"code":404,"msg":"没有该网站"}`), nil
				}},
			tscripted.Tool{Tool: tools.Tool{Name: "create_site", InputSchema: schema}, Write: true,
				Handler: func(*tscripted.State, json.RawMessage) (json.RawMessage, error) {
					started <- struct{}{}
					<-hang
					return json.RawMessage(`{"code":200,"msg":"ok","data":{"id":"site_7"}}`), nil
				}})
		// create_site has a minute and a verify: query_site by its title.
		verified := func(s string) string {
			var doc map[string]any
			if err := json.Unmarshal([]byte(s), &doc); err != nil {
				t.Fatal(err)
			}
			cs := doc["tools"].(map[string]any)["create_site"].(map[string]any)
			cs["timeoutMs"] = 60000
			cs["verify"] = map[string]any{"tool": "query_site", "args": map[string]any{"title": map[string]any{"from": "call.title"}}}
			b, _ := json.Marshal(doc)
			return string(b)
		}
		quiet := func(o *server.Options) { o.Logger = slog.New(slog.DiscardHandler) }
		a := instance(t, db, "a", c, fixtureSetup{contract: verified, tools: writes, options: quiet})
		t.Cleanup(func() { close(hang) })
		actx, kill := context.WithCancel(context.Background())
		if err := a.srv.Start(actx); err != nil {
			t.Fatal(err)
		}
		sid, res := a.suspend(t)
		go func() {
			req, _ := http.NewRequest("POST", a.ts.URL+"/v1/approvals/"+res.Approval.ID, strings.NewReader(`{"decision":"CONFIRM"}`))
			req.Header.Set("Authorization", "Bearer "+keyAcme)
			if resp, err := a.ts.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-started
		kill()
		c.Add(2 * lease)

		finish := []mscripted.Turn{{Expect: &mscripted.Expect{Tool: "query_site", Contains: "已核实"},
			ToolCalls: []mscripted.Call{{Name: "builtin_node_finish", Arguments: `{"output":"网站 Spring Launch 已创建"}`}}}}
		b := instance(t, db, "b", c, fixtureSetup{contract: verified, tools: writes, turns: finish})
		if err := b.srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		path := b.ts.URL + "/v1/sessions/" + sid + "/tasks/t1/verify"
		// The write started at start and has 60 s: 40 s are left.
		for _, body := range []string{`{}`, `{"took":false}`} {
			req, _ := http.NewRequest("POST", path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+keyAcme)
			resp, err := b.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var eb server.ErrorBody
			err = json.NewDecoder(resp.Body).Decode(&eb)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusConflict || eb.Error.Code != server.CodeVerifyTooEarly ||
				resp.Header.Get("Retry-After") != "40" || !strings.Contains(eb.Error.Message, "2026-11-01T09:01:00Z") {
				t.Fatalf("verify %s before the window: %d Retry-After %q %+v %v", body, resp.StatusCode, resp.Header.Get("Retry-After"), eb, err)
			}
		}
		var task server.Task
		if code, eb := b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK ||
			task.Status != "SUSPENDED" || task.Suspension == nil || task.Suspension.Kind != "VERIFY" {
			t.Fatalf("task after a verify too early: %d %+v %+v", code, eb, task)
		}
		// The write lands; found is an answer at once, window or not.
		landed.Store(true)
		var done server.RunResult
		if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/verify", keyAcme, `{}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
			t.Fatalf("verify once landed: %d %+v %+v", code, eb, done.Task)
		}
		if n := writes.Count("create_site"); n != 1 {
			t.Fatalf("create_site sent %d times", n)
		}
		if n := writes.Count("query_site"); n != 2 {
			t.Fatalf("query_site called %d times, want 2 (the user's no calls nothing)", n)
		}
	})
}

// An instance dies during a read. The task was RUNNING, not waiting for
// anyone: the instance that takes the session over shows it RUNNING, and
// resume runs it on — the read's call is answered as interrupted, and the
// model goes on from there.
func TestResumeInterruptedTask(t *testing.T) {
	t.Parallel()
	forDialects(t, func(t *testing.T, db *sqlstore.DB) {
		c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
		started := make(chan struct{}, 1)
		hang := make(chan struct{})
		reads := tscripted.New(nil,
			tscripted.Tool{Tool: tools.Tool{Name: "query_space", InputSchema: json.RawMessage(`{"type":"object","properties":{"spaceName":{"type":"string"}}}`)},
				Handler: func(*tscripted.State, json.RawMessage) (json.RawMessage, error) {
					started <- struct{}{}
					<-hang
					return json.RawMessage(`{"code":200,"msg":"ok","data":{"spaces":[]}}`), nil
				}},
			tscripted.Tool{Tool: tools.Tool{Name: "query_site", InputSchema: json.RawMessage(`{"type":"object"}`)},
				Handler: tscripted.Fixed(`{"code":200,"data":{"sites":[]}}`)},
			tscripted.Tool{Tool: tools.Tool{Name: "create_site", InputSchema: json.RawMessage(`{"type":"object"}`)}, Write: true,
				Handler: tscripted.Fixed(`{"code":200}`)})
		slow := func(s string) string { return strings.ReplaceAll(s, `"timeoutMs":100`, `"timeoutMs":60000`) }
		quiet := func(o *server.Options) { o.Logger = slog.New(slog.DiscardHandler) }
		a := instance(t, db, "a", c, fixtureSetup{contract: slow, tools: reads, options: quiet})
		t.Cleanup(func() { close(hang) })
		actx, kill := context.WithCancel(context.Background())
		if err := a.srv.Start(actx); err != nil {
			t.Fatal(err)
		}
		sid := a.session(t, keyAcme)
		go func() {
			req, _ := http.NewRequest("POST", a.ts.URL+"/v1/sessions/"+sid+"/messages", strings.NewReader(`{"text":"市场部有哪些网站"}`))
			req.Header.Set("Authorization", "Bearer "+keyAcme)
			if resp, err := a.ts.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-started
		kill()
		c.Add(2 * lease)

		finish := []mscripted.Turn{{Expect: &mscripted.Expect{Tool: "query_space", Contains: "没有返回结果"},
			ToolCalls: []mscripted.Call{{Name: "builtin_node_fail", Arguments: `{"reason":"空间服务没有回应"}`}}}}
		b := instance(t, db, "b", c, fixtureSetup{contract: slow, tools: reads, turns: finish})
		var task server.Task
		if code, eb := b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK || task.Status != "RUNNING" {
			t.Fatalf("task on b: %d %+v %+v", code, eb, task)
		}
		if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/verify", keyAcme, `{}`, nil); code != http.StatusConflict || eb.Error.Code != server.CodeNotSuspended {
			t.Fatalf("verify of a running task: %d %+v", code, eb)
		}
		var done server.RunResult
		if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/resume", keyAcme, "", &done); code != http.StatusOK ||
			done.Task.Status != "FAILED" || done.Task.Reason != "空间服务没有回应" {
			t.Fatalf("resume: %d %+v %+v", code, eb, done.Task)
		}
		if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/resume", keyAcme, "", nil); code != http.StatusConflict || eb.Error.Code != server.CodeNotInterrupted {
			t.Fatalf("resume of an ended task: %d %+v", code, eb)
		}
	})
}

// A session idle past IdleTimeout is closed in memory and opened again
// from the directory by its next request, whole: its tasks and approval.
func TestCloseIdleSessions(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlstore.SQLite)
	c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	f := instance(t, db, "a", c, fixtureSetup{options: func(o *server.Options) { o.IdleTimeout = time.Minute }})
	sid, res := f.suspend(t)
	if n := f.srv.CloseIdle(); n != 0 {
		t.Fatalf("closed %d sessions in use", n)
	}
	c.Add(2 * time.Minute)
	if n := f.srv.CloseIdle(); n != 1 {
		t.Fatalf("closed %d idle sessions, want 1", n)
	}
	var info server.SessionInfo
	if code, eb := f.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", &info); code != http.StatusOK ||
		len(info.Tasks) != 1 || info.Tasks[0].Status != "SUSPENDED" || info.Tasks[0].Approval != res.Approval.ID {
		t.Fatalf("session opened again: %d %+v %+v", code, eb, info)
	}
	if n := f.srv.CloseIdle(); n != 0 {
		t.Fatalf("closed %d sessions just used", n)
	}
}

// The process died after taking a CONFIRM and before the write went
// through the gate: the node still waits for an approval, but the one the
// client holds is used up. Reopened, the task gets a new approval to answer.
func TestApprovalAskedAgainAfterCrash(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlstore.SQLite)
	c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	a := instance(t, db, "a", c, fixtureSetup{})
	sid, res := a.suspend(t)
	used, _ := json.Marshal(res.Approval)
	if ok, err := db.MoveApproval(context.Background(), res.Approval.ID, "PENDING", "CONFIRM", used); !ok || err != nil {
		t.Fatalf("move: %v %v", ok, err)
	}
	a.ts.Close()
	a.srv.Close()

	b := instance(t, db, "b", c, fixtureSetup{skipTurns: 3})
	var task server.Task
	if code, eb := b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK ||
		task.Status != "SUSPENDED" || task.Approval == "" || task.Approval == res.Approval.ID {
		t.Fatalf("task after the crash: %d %+v %+v", code, eb, task)
	}
	var done server.RunResult
	if code, eb := b.do(t, "POST", "/v1/approvals/"+task.Approval, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
		t.Fatalf("CONFIRM of the new approval: %d %+v %+v", code, eb, done.Task)
	}
	if n := b.tools.Count("create_site"); n != 1 {
		t.Fatalf("create_site sent %d times", n)
	}
}

// An instance whose lease ran out, and whose session another instance took
// over meanwhile, answers for it no more, even after renewing its lease.
func TestLapsedLeaseLosesSessions(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlstore.SQLite)
	c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	a := instance(t, db, "a", c, fixtureSetup{})
	b := instance(t, db, "b", c, fixtureSetup{skipTurns: 3})
	ctx := context.Background()
	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	if err := a.srv.Start(actx); err != nil {
		t.Fatal(err)
	}
	sid, res := a.suspend(t)
	other := a.session(t, keyAcme)
	// a's lease runs out (its renewals stalled); b starts and takes the
	// session over with its next request.
	c.Add(2 * lease)
	if err := b.srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if code, eb := b.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", nil); code != http.StatusOK {
		t.Fatalf("take-over by b: %d %+v", code, eb)
	}
	// a renews its lease through a request for its other session, then
	// is asked for the first one again: it is b's now.
	if code, eb := a.do(t, "GET", "/v1/sessions/"+other, keyAcme, "", nil); code != http.StatusOK {
		t.Fatalf("a's other session: %d %+v", code, eb)
	}
	if code, eb := a.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, nil); code != http.StatusConflict ||
		eb.Error.Code != server.CodeSessionElsewhere || !strings.Contains(eb.Error.Message, "instance b") {
		t.Fatalf("CONFIRM on a after b took over: %d %+v", code, eb)
	}
	if n := a.tools.Count("create_site"); n != 0 {
		t.Fatalf("a sent the write %d times", n)
	}
	var done server.RunResult
	if code, eb := b.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
		t.Fatalf("CONFIRM on b: %d %+v", code, eb)
	}
}

// Options New refuses, with the reason.
func TestNewRefusesOptions(t *testing.T) {
	t.Parallel()
	base := func() server.Options {
		return server.Options{Keys: map[string]string{"k": "acme"}, Agents: agentsFunc(nil), Tools: tscripted.New(nil),
			NewModel: func(string, string) (model.Model, error) { return nil, nil }, Loop: loop.DefaultConfig()}
	}
	tests := []struct {
		name   string
		change func(*server.Options)
		want   string
	}{
		{"reserved tenant", func(o *server.Options) { o.Keys = map[string]string{"k": host.ProbeTenant} },
			`server: invalid options: tenant name "warden.probe" is reserved for self-tests`},
		{"negative lease", func(o *server.Options) { o.Lease = -time.Second }, "server: invalid options: negative timeout"},
		{"negative idle timeout", func(o *server.Options) { o.IdleTimeout = -time.Second }, "server: invalid options: negative timeout"},
		{"no first-party plugins", func(*server.Options) {},
			"server: invalid options: no first-party plugins: Guards and Builtins, or a plugin directory"},
		{"guards without builtins", func(o *server.Options) { o.Guards = chain.NativeGuards() },
			"server: invalid options: no first-party plugins: Guards and Builtins, or a plugin directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := base()
			tt.change(&o)
			if _, err := server.New(o); !errors.Is(err, server.ErrConfig) || err.Error() != tt.want {
				t.Fatalf("err %v, want %s", err, tt.want)
			}
		})
	}
}

// A tenant pages through its own sessions, newest first, on any instance;
// another tenant sees none of them; bad parameters are refused.
func TestListSessions(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlstore.SQLite)
	c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	a := instance(t, db, "a", c, fixtureSetup{})
	var ids []string
	for range 5 {
		ids = append(ids, a.session(t, keyAcme))
		c.Add(time.Second)
	}
	a.session(t, keyGlobex)
	b := instance(t, db, "b", c, fixtureSetup{})
	var got []string
	after := ""
	for page := 0; page < 5; page++ {
		var list server.SessionList
		path := "/v1/sessions?limit=2"
		if after != "" {
			path += "&after=" + after
		}
		if code, eb := b.do(t, "GET", path, keyAcme, "", &list); code != http.StatusOK {
			t.Fatalf("page %d: %d %+v", page, code, eb)
		}
		for _, s := range list.Sessions {
			got = append(got, s.ID)
		}
		if after = list.Next; after == "" {
			break
		}
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listing %v, want %v", got, want)
	}
	// The store filters by the latest task's status: none has a task yet.
	for _, tt := range []struct {
		query string
		n     int
	}{{"?status=NONE", 5}, {"?status=FAILED,SUSPENDED", 0}, {"?status=NONE&since=2026-11-01T09:00:03Z", 2}} {
		var list server.SessionList
		if code, eb := b.do(t, "GET", "/v1/sessions"+tt.query, keyAcme, "", &list); code != http.StatusOK || len(list.Sessions) != tt.n {
			t.Fatalf("%s: %d %+v %+v", tt.query, code, eb, list)
		}
		for _, s := range list.Sessions {
			if s.Tasks != 0 || s.Status != "" || s.Latest != "" {
				t.Fatalf("%s: a session without tasks listed as %+v", tt.query, s)
			}
		}
	}
	// The platform's view: every tenant's, each naming its tenant; a
	// tenant's key does not open it.
	var all server.SessionList
	if code, eb := b.do(t, "GET", "/admin/v1/sessions?status=NONE", keyAdmin, "", &all); code != http.StatusOK || len(all.Sessions) != 6 ||
		all.Sessions[0].Tenant != "globex" || all.Sessions[1].Tenant != "acme" || all.Sessions[1].ID != ids[4] {
		t.Fatalf("admin listing: %d %+v %+v", code, eb, all)
	}
	if code, _ := b.do(t, "GET", "/admin/v1/sessions", keyAcme, "", nil); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Fatalf("a tenant key lists every tenant's sessions: %d", code)
	}
	var globex server.SessionList
	if b.do(t, "GET", "/v1/sessions", keyGlobex, "", &globex); len(globex.Sessions) != 1 || slices.Contains(ids, globex.Sessions[0].ID) {
		t.Fatalf("globex sees %+v", globex)
	}
	for _, tt := range []struct{ query, code string }{
		{"?limit=0", server.CodeInvalidRequest},
		{"?limit=201", server.CodeInvalidRequest},
		{"?limit=x", server.CodeInvalidRequest},
		{"?after=not-a-cursor", server.CodeInvalidRequest},
		{"?page=2", server.CodeUnknownField},
		{"?status=WAITING", server.CodeInvalidRequest},
		{"?status=FAILED,", server.CodeInvalidRequest},
		{"?since=yesterday", server.CodeInvalidRequest},
	} {
		if code, eb := b.do(t, "GET", "/v1/sessions"+tt.query, keyAcme, "", nil); code != http.StatusBadRequest || eb.Error.Code != tt.code {
			t.Fatalf("%s: %d %+v", tt.query, code, eb)
		}
	}
}

// A process that dies after the task's last node ended and before the
// task was saved leaves it shown SUSPENDED for an approval already used.
// Reopening the session completes the task from its nodes: it shows DONE,
// its approvals no longer wait, and the session takes a new message.
func TestTaskCompletedAfterCrash(t *testing.T) {
	tests := []struct {
		name string
		// stateBehind: the runtime's task record died unsaved too.
		stateBehind bool
		// pending: a PENDING approval of the task's node was left.
		pending bool
	}{
		{name: "the task's save lost"},
		{name: "the task's status and save lost", stateBehind: true},
		{name: "a pending approval left", pending: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forDialects(t, func(t *testing.T, db *sqlstore.DB) {
				ctx := context.Background()
				c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
				a := instance(t, db, "a", c, fixtureSetup{})
				sid, asked := a.suspend(t)
				var done server.RunResult
				if code, eb := a.do(t, "POST", "/v1/approvals/"+asked.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
					t.Fatalf("CONFIRM: %d %+v %+v", code, eb, done.Task)
				}
				a.ts.Close()
				a.srv.Close()
				// What the directory held before the task was saved.
				doc, _ := json.Marshal(asked.Task)
				if err := db.PutTask(ctx, sid, store.Doc{ID: "t1", Seq: 1, Doc: doc}); err != nil {
					t.Fatal(err)
				}
				if tt.stateBehind {
					st, err := db.Session(ctx, state.Options{SessionID: sid})
					if err != nil {
						t.Fatal(err)
					}
					if err := st.SetTaskStatus("t1", state.Suspended); err != nil {
						t.Fatal(err)
					}
				}
				left := "ap_left"
				if tt.pending {
					ad, _ := json.Marshal(server.Approval{ID: left, Session: sid, Task: "t1", Node: asked.Task.Node, Tool: "create_site", Status: "PENDING"})
					if err := db.AddApproval(ctx, store.Approval{ID: left, Tenant: "acme", Session: sid, Node: asked.Task.Node, Status: "PENDING", Doc: ad}); err != nil {
						t.Fatal(err)
					}
				}

				b := instance(t, db, "b", c, fixtureSetup{})
				var task server.Task
				if code, eb := b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK ||
					task.Status != "DONE" || task.Output != done.Task.Output || task.Approval != "" || task.Suspension != nil || task.Node != "" {
					t.Fatalf("task after the crash: %d %+v %+v, want DONE with output %q", code, eb, task, done.Task.Output)
				}
				st, err := db.Session(ctx, state.Options{SessionID: sid})
				if err != nil {
					t.Fatal(err)
				}
				if rt, err := st.Task("t1"); err != nil || rt.Status != state.Done {
					t.Fatalf("runtime task: %+v %v, want DONE", rt, err)
				}
				if tt.pending {
					if ap, err := db.Approval(ctx, left); err != nil || ap.Status != "STALE" {
						t.Fatalf("approval left pending: %+v %v, want STALE", ap, err)
					}
				}
				if code, eb := b.do(t, "POST", "/v1/approvals/"+asked.Approval.ID, keyAcme, `{"decision":"CONFIRM"}`, nil); code != http.StatusConflict || eb.Error.Code != "approval_used" {
					t.Fatalf("CONFIRM again: %d %+v, want 409 approval_used", code, eb)
				}
				var next server.RunResult
				if code, eb := b.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`, &next); code != http.StatusOK ||
					next.Task.ID != "t2" || next.Task.Status != "SUSPENDED" || next.Approval == nil {
					t.Fatalf("new message: %d %+v %+v", code, eb, next.Task)
				}
				if n := b.tools.Count("create_site"); n != 0 {
					t.Fatalf("create_site sent %d times by the second instance", n)
				}
			})
		})
	}
}

// A process that dies after a task's node was suspended for approval and
// before the approval was asked leaves the task shown RUNNING with nobody
// asked. Reopening the session asks: the task shows SUSPENDED with a new
// PENDING approval, whose CONFIRM runs the write once.
func TestApprovalAskedAfterCrash(t *testing.T) {
	forDialects(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
		a := instance(t, db, "a", c, fixtureSetup{})
		sid, asked := a.suspend(t)
		a.ts.Close()
		a.srv.Close()
		// What the directory held before the approval and the task were
		// saved: the task as posted, and no approval to answer.
		doc, _ := json.Marshal(server.Task{ID: "t1", Objective: asked.Task.Objective, Status: "RUNNING"})
		if err := db.PutTask(ctx, sid, store.Doc{ID: "t1", Seq: 1, Doc: doc}); err != nil {
			t.Fatal(err)
		}
		stale, _ := json.Marshal(asked.Approval)
		if ok, err := db.MoveApproval(ctx, asked.Approval.ID, "PENDING", "STALE", stale); !ok || err != nil {
			t.Fatalf("move: %v %v", ok, err)
		}

		b := instance(t, db, "b", c, fixtureSetup{skipTurns: 3})
		var task server.Task
		if code, eb := b.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK ||
			task.Status != "SUSPENDED" || task.Suspension == nil || task.Suspension.Kind != "APPROVAL" || task.Node != asked.Task.Node ||
			task.Approval == "" || task.Approval == asked.Approval.ID {
			t.Fatalf("task after the crash: %d %+v %+v, want SUSPENDED for a new approval", code, eb, task)
		}
		var ap server.Approval
		if code, eb := b.do(t, "GET", "/v1/approvals/"+task.Approval, keyAcme, "", &ap); code != http.StatusOK ||
			ap.Status != "PENDING" || ap.ArgsDigest != asked.Approval.ArgsDigest {
			t.Fatalf("approval asked: %d %+v %+v", code, eb, ap)
		}
		var done server.RunResult
		if code, eb := b.do(t, "POST", "/v1/approvals/"+task.Approval, keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
			t.Fatalf("CONFIRM: %d %+v %+v", code, eb, done.Task)
		}
		if n := b.tools.Count("create_site"); n != 1 {
			t.Fatalf("create_site sent %d times", n)
		}
	})
}
