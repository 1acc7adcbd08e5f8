package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store"
)

const springLaunch = `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`

// post sends a POST and returns its status, Location and body.
func (f *fixture) post(t *testing.T, ctx context.Context, path, body string) (int, string, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), b, nil
}

// TestAsyncMessage: a message is answered 202 at once with the task
// RUNNING and its Location; the run goes on, and the task settles where
// the synchronous answer would have left it.
func TestAsyncMessage(t *testing.T) {
	t.Parallel()
	g := &gate{tool: "query_space", entered: make(chan struct{}), open: make(chan struct{})}
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		g.Provider = o.Tools
		o.Tools = g
	}})
	sid := f.session(t, keyAcme)
	code, loc, b, err := f.post(t, context.Background(), "/v1/sessions/"+sid+"/messages", springLaunch)
	if err != nil {
		t.Fatal(err)
	}
	var res server.RunResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if code != http.StatusAccepted || loc != "/v1/sessions/"+sid+"/tasks/t1" || res.Task.ID != "t1" || res.Task.Status != "RUNNING" {
		t.Fatalf("got %d, Location %q, %s", code, loc, b)
	}
	<-g.entered
	// While it runs, the task shows RUNNING and the session is busy.
	var tk server.Task
	if f.do(t, "GET", loc, keyAcme, "", &tk); tk.Status != "RUNNING" {
		t.Fatalf("task while running = %+v", tk)
	}
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages", keyAcme, springLaunch, nil); code != http.StatusConflict || eb.Error.Code != server.CodeSessionBusy {
		t.Fatalf("second message: %d %+v", code, eb)
	}
	// A wait that ends before the run is 202 with the task as it is.
	var late server.RunResult
	if code, _ := f.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/follow-up?wait=1ms", keyAcme, `{"answer":"x"}`, &late); code != http.StatusConflict {
		t.Fatalf("follow-up of a running task: %d", code)
	}
	close(g.open)
	tk = f.settled(t, keyAcme, sid, "t1")
	if tk.Status != "SUSPENDED" || tk.Approval == "" {
		t.Fatalf("settled task = %+v", tk)
	}
	// The answer may be asked not to wait too.
	code, loc, b, err = f.post(t, context.Background(), "/v1/approvals/"+tk.Approval+"?wait=0s", `{"decision":"CONFIRM"}`)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusAccepted || loc != "/v1/sessions/"+sid+"/tasks/t1" {
		t.Fatalf("CONFIRM without waiting: %d %q %s", code, loc, b)
	}
	if tk = f.settled(t, keyAcme, sid, "t1"); tk.Status != "DONE" || f.tools.Count("create_site") != 1 {
		t.Fatalf("after CONFIRM: %+v, create_site calls %d", tk, f.tools.Count("create_site"))
	}
}

// TestRunOutlivesItsClient: a client that waits and goes away leaves the
// run going; the task settles and its events are kept.
func TestRunOutlivesItsClient(t *testing.T) {
	t.Parallel()
	g := &gate{tool: "query_space", entered: make(chan struct{}), open: make(chan struct{})}
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		g.Provider = o.Tools
		o.Tools = g
	}})
	sid := f.session(t, keyAcme)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, _, err := f.post(t, ctx, "/v1/sessions/"+sid+"/messages?wait=5m", springLaunch)
		errc <- err
	}()
	<-g.entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request ended with %v", err)
	}
	close(g.open)
	if tk := f.settled(t, keyAcme, sid, "t1"); tk.Status != "SUSPENDED" || tk.Approval == "" {
		t.Fatalf("settled task = %+v", tk)
	}
	var trace struct {
		Events []server.Event `json:"events"`
	}
	f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &trace)
	if !hasEvent(trace.Events, "TOOL", "create_site", "DEFERRED", "APPROVAL_REQUIRED") {
		t.Fatalf("no DEFERRED create_site in %+v", trace.Events)
	}
}

func TestWaitParameter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sid, res := f.suspend(t)
	task := "/v1/sessions/" + sid + "/tasks/" + res.Task.ID
	tests := []struct{ name, path, body, msg string }{
		{"not a duration", "/v1/sessions/" + sid + "/messages?wait=soon", springLaunch, `wait must be one duration from 0s to 5m (such as 30s), not "soon"`},
		{"too long", "/v1/sessions/" + sid + "/messages?wait=6m", springLaunch, `wait must be one duration from 0s to 5m (such as 30s), not "6m"`},
		{"negative", "/v1/approvals/" + res.Approval.ID + "?wait=-1s", `{"decision":"CONFIRM"}`, `wait must be one duration from 0s to 5m (such as 30s), not "-1s"`},
		{"twice", task + "/follow-up?wait=1s&wait=2s", `{"answer":"x"}`, `wait must be one duration from 0s to 5m (such as 30s), not several values`},
		{"resume", task + "/resume?wait=x", ``, `wait must be one duration from 0s to 5m (such as 30s), not "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, "POST", tt.path, keyAcme, tt.body, nil)
			if code != http.StatusBadRequest || eb.Error.Code != server.CodeInvalidRequest || eb.Error.Message != tt.msg {
				t.Fatalf("got %d %+v, want 400 %s %q", code, eb, server.CodeInvalidRequest, tt.msg)
			}
		})
	}
	// Nothing ran: the approval still waits.
	var a server.Approval
	if f.do(t, "GET", "/v1/approvals/"+res.Approval.ID, keyAcme, "", &a); a.Status != "PENDING" {
		t.Fatalf("approval after refused requests = %+v", a)
	}
	// A wait long enough answers the settled task.
	var done server.RunResult
	if code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID+"?wait=30s", keyAcme, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
		t.Fatalf("CONFIRM ?wait=30s: %d %+v %+v", code, eb, done.Task)
	}
}

// slowSettle is a session store that takes its time to store a task that
// no longer runs, as a loaded database may.
type slowSettle struct {
	store.Directory
	delay time.Duration
}

func (d slowSettle) PutTask(ctx context.Context, session string, t store.Doc) error {
	if !bytes.Contains(t.Doc, []byte(`"status":"RUNNING"`)) {
		time.Sleep(d.delay)
	}
	return d.Directory.PutTask(ctx, session, t)
}

// TestGoOnAtTheFinalEvent: a client that follows the trace and goes on
// as soon as the task's final event arrives is answered as the settled
// task allows (here: the task waits for its approval), never session_busy
// because the run is still storing the task.
func TestGoOnAtTheFinalEvent(t *testing.T) {
	t.Parallel()
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		o.Directory = slowSettle{Directory: store.NewMemory(), delay: 300 * time.Millisecond}
	}})
	sid := f.session(t, keyAcme)
	if code, _, b, err := f.post(t, context.Background(), "/v1/sessions/"+sid+"/messages", springLaunch); err != nil || code != http.StatusAccepted {
		t.Fatalf("message: %d %s %v", code, b, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var trace struct {
			Events []server.Event `json:"events"`
		}
		f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &trace)
		if n := len(trace.Events); n > 0 && trace.Events[n-1].Kind == "TASK" && trace.Events[n-1].Status == "SUSPENDED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no final TASK event in a minute: %+v", trace.Events)
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages", keyAcme, springLaunch, nil)
	if code != http.StatusConflict || eb.Error.Code != server.CodeTaskPending || eb.Error.Message != "task t1 waits for the user's answer" {
		t.Fatalf("message at the final event: %d %+v", code, eb)
	}
}
