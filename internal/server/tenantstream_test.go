package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store"
)

type sse struct {
	id, event, data string
}

// openTenant opens GET /v1/events and returns its events as they come.
func (f *fixture) openTenant(t *testing.T, ctx context.Context, key, last string) <-chan sse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sse, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var e sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.event != "" {
					out <- e
				}
				e = sse{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return out
}

// next waits for the stream's next event.
func next(t *testing.T, ch <-chan sse) (sse, server.Approval) {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		var a server.Approval
		if e.event == "approval" {
			if err := json.Unmarshal([]byte(e.data), &a); err != nil {
				t.Fatalf("approval event: %v: %s", err, e.data)
			}
		}
		return e, a
	case <-time.After(30 * time.Second):
		t.Fatal("no event in 30s")
	}
	return sse{}, server.Approval{}
}

// TestTenantStream: an approval held and answered reaches the tenant's
// event stream (with who answered), another tenant's never does, and a
// stream resumed from Last-Event-ID sends the change again.
func TestTenantStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One already pending opens the stream.
	_, first := f.suspend(t)
	acme := f.openTenant(t, ctx, keyAcme, "")
	globex := f.openTenant(t, ctx, keyGlobex, "")
	if e, a := next(t, acme); e.event != "approval" || a.ID != first.Approval.ID || a.Status != "PENDING" {
		t.Fatalf("opening event = %+v", e)
	}
	if e, _ := next(t, acme); e.event != "synced" {
		t.Fatalf("after the pending ones: %+v", e)
	}
	if e, _ := next(t, globex); e.event != "synced" {
		t.Fatalf("globex opens with %+v", e)
	}
	_, second := f.suspend(t)
	e, a := next(t, acme)
	if e.event != "approval" || a.ID != second.Approval.ID || a.Status != "PENDING" || e.id == "" {
		t.Fatalf("held event = %+v", e)
	}
	held := e.id
	if code, eb := f.do(t, "POST", "/v1/approvals/"+second.Approval.ID+"?wait=5m", keyAcme, `{"decision":"REJECT","reason":"not now"}`, nil); code != http.StatusOK {
		t.Fatalf("REJECT: %d %+v", code, eb)
	}
	e, a = next(t, acme)
	if e.event != "approval" || a.ID != second.Approval.ID || a.Status != "REJECT" || a.Answered == nil ||
		a.AnsweredBy == nil || a.AnsweredBy.Tenant != "acme" || !strings.HasPrefix(a.AnsweredBy.Key, "sha256:") || a.Reason != "not now" {
		t.Fatalf("answered event = %+v %s", e, e.data)
	}
	// Resumed from the held event: the answer comes again.
	again := f.openTenant(t, ctx, keyAcme, held)
	e, a = next(t, again)
	if e.event != "approval" || a.ID != second.Approval.ID || a.Status != "REJECT" {
		t.Fatalf("resumed event = %+v", e)
	}
	select {
	case e := <-globex:
		t.Fatalf("another tenant's stream got %+v", e)
	default:
	}
}

func TestTenantStreamRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name, path, key string
		code            int
		err             string
	}{
		{"no key", "/v1/events", "", http.StatusUnauthorized, server.CodeUnauthorized},
		{"bad after", "/v1/events?after=x", keyAcme, http.StatusBadRequest, server.CodeInvalidRequest},
		{"unknown parameter", "/v1/events?status=PENDING", keyAcme, http.StatusBadRequest, server.CodeUnknownField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, "GET", tt.path, tt.key, "", nil)
			if code != tt.code || eb.Error.Code != tt.err {
				t.Fatalf("%s: %d %s", tt.path, code, eb.Error.Code)
			}
		})
	}
}

// TestTenantStreamOtherInstance: the stream of one instance sees an
// approval held on another instance sharing the directory.
func TestTenantStreamOtherInstance(t *testing.T) {
	t.Parallel()
	dir := store.NewMemory()
	on := func(name string) *fixture {
		return buildFixture(t, fixtureSetup{options: func(o *server.Options) {
			o.Directory, o.Instance, o.Lease = dir, name, 10*time.Second
		}})
	}
	a, b := on("a"), on("b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := a.openTenant(t, ctx, keyAcme, "")
	if e, _ := next(t, live); e.event != "synced" {
		t.Fatalf("opening event = %+v", e)
	}
	_, res := b.suspend(t)
	if e, ap := next(t, live); e.event != "approval" || ap.ID != res.Approval.ID || ap.Status != "PENDING" {
		t.Fatalf("held on b, seen on a: %+v", e)
	}
}

// TestSessionLocale: a session says the language of its agent's texts,
// the agent's locale setting.
func TestSessionLocale(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sid := f.session(t, keyAcme)
	var info server.SessionInfo
	if code, eb := f.do(t, "GET", "/v1/sessions/"+sid, keyAcme, "", &info); code != http.StatusOK {
		t.Fatalf("GET session: %d %+v", code, eb)
	}
	if info.Locale != "zh-CN" {
		t.Fatalf("locale = %q, want the default zh-CN", info.Locale)
	}
}

// TestTenantStreamFollowUp: a task asking the user back reaches the
// tenant's stream as WAITING, and as ANSWERED once answered; the question
// is not on the stream (it is read from the task, masked).
func TestTenantStreamFollowUp(t *testing.T) {
	t.Parallel()
	f := buildFixture(t, fixtureSetup{turns: []mscripted.Turn{
		{ToolCalls: []mscripted.Call{{Name: "builtin_node_follow_up", Arguments: `{"question":"网站叫什么？","expectedFields":["title"]}`}}},
		{ToolCalls: []mscripted.Call{{Name: "builtin_node_finish", Arguments: `{"output":"好的"}`}}},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := f.openTenant(t, ctx, keyAcme, "")
	if e, _ := next(t, live); e.event != "synced" {
		t.Fatalf("opening event = %+v", e)
	}
	sid := f.session(t, keyAcme)
	var res server.RunResult
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"建一个网站"}`, &res); code != http.StatusOK ||
		res.Task.Suspension == nil || res.Task.Suspension.Kind != "FOLLOW_UP" {
		t.Fatalf("message: %d %+v %+v", code, eb, res.Task)
	}
	e, _ := next(t, live)
	if want := `{"session":"` + sid + `","task":"t1","status":"WAITING"}`; e.event != "followup" || e.data != want {
		t.Fatalf("asked: %+v, want %s", e, want)
	}
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/tasks/t1/follow-up?wait=5m", keyAcme, `{"answer":"市场部"}`, nil); code != http.StatusOK {
		t.Fatalf("answer: %d %+v", code, eb)
	}
	e, _ = next(t, live)
	if want := `{"session":"` + sid + `","task":"t1","status":"ANSWERED"}`; e.event != "followup" || e.data != want {
		t.Fatalf("answered: %+v, want %s", e, want)
	}
}
