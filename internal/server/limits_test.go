package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/tools"
)

// send is fixture.do that also returns the Retry-After header.
func (f *fixture) send(t *testing.T, method, path, key, body string) (int, string, server.ErrorBody) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb server.ErrorBody
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s %s: %d: %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), eb
}

type answer struct {
	status     int
	retryAfter string
	code, msg  string
}

func (f *fixture) expect(t *testing.T, method, path, key, body string, want answer) {
	t.Helper()
	code, ra, eb := f.send(t, method, path, key, body)
	if got := (answer{code, ra, eb.Error.Code, eb.Error.Message}); got != want {
		t.Fatalf("%s %s: got %+v, want %+v", method, path, got, want)
	}
}

// TestRateLimit: each tenant has a token bucket of its own; a request
// beyond it is 429 tenant_rate_limited with the wait for the next token.
func TestRateLimit(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		o.Now = clk.Now
		o.Limits = server.Limits{Rate: 0.5, Burst: 2}
	}})
	ok := answer{status: 200}
	limited := answer{429, "2", server.CodeTenantRateLimited, "the tenant sent more than 0.5 requests a second (burst 2)"}
	f.expect(t, "GET", "/v1/sessions", keyAcme, "", ok)
	f.expect(t, "GET", "/v1/sessions", keyAcme, "", ok)
	f.expect(t, "GET", "/v1/sessions", keyAcme, "", limited)
	// A refused request takes no token: the wait stays the same.
	f.expect(t, "POST", "/v1/sessions", keyAcme, "", limited)
	// The other tenant has its own bucket.
	f.expect(t, "GET", "/v1/sessions", keyGlobex, "", ok)
	// An unauthenticated request is refused as such, not counted.
	f.expect(t, "GET", "/v1/sessions", "nope", "", answer{401, "", server.CodeUnauthorized, "a valid tenant API key is required"})
	clk.Add(time.Second)
	f.expect(t, "GET", "/v1/sessions", keyAcme, "", answer{429, "1", server.CodeTenantRateLimited, limited.msg})
	clk.Add(time.Second)
	f.expect(t, "GET", "/v1/sessions", keyAcme, "", ok)
	// Health checks carry no key and are never limited.
	for range 3 {
		f.expect(t, "GET", "/healthz", keyAcme, "", ok)
	}
}

// TestSessionLimit: a tenant's sessions open on the instance are bounded;
// the answer says when an idle one closes, and without idle closing (the
// memory store) that none will.
func TestSessionLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		idle time.Duration
		want answer
	}{
		{"sessions are kept", 0, answer{429, "", server.CodeTenantSessionLimit,
			"the tenant has 2 sessions open, the most it may have; sessions are kept until the service restarts"}},
		{"idle sessions close", 10 * time.Minute, answer{429, "360", server.CodeTenantSessionLimit,
			"the tenant has 2 sessions open, the most it may have; an idle one closes in time"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
				o.Now = clk.Now
				o.IdleTimeout = tt.idle
				o.Limits = server.Limits{MaxSessions: 2}
			}})
			f.session(t, keyAcme)
			clk.Add(time.Minute)
			f.session(t, keyAcme)
			clk.Add(3 * time.Minute)
			f.expect(t, "POST", "/v1/sessions", keyAcme, "", tt.want)
			f.session(t, keyGlobex)
			var list struct {
				Sessions []server.SessionSummary `json:"sessions"`
			}
			f.do(t, "GET", "/v1/sessions", keyAcme, "", &list)
			if len(list.Sessions) != 2 {
				t.Fatalf("acme has %d sessions, want 2", len(list.Sessions))
			}
			if tt.idle > 0 {
				// Once the first is closed as idle there is room again.
				clk.Add(6 * time.Minute)
				if n := f.srv.CloseIdle(); n != 1 {
					t.Fatalf("CloseIdle closed %d, want 1", n)
				}
				f.session(t, keyAcme)
			}
		})
	}
}

// gate blocks the first call of one tool until it is opened.
type gate struct {
	tools.Provider
	tool    string
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (g *gate) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	if name == g.tool {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.entered)
			<-g.open
		}
	}
	return g.Provider.CallTool(ctx, name, args)
}

// TestRunLimit: a tenant's runs in flight are bounded; one more is 429
// tenant_run_limit with Retry-After: 1, and another tenant is not held up.
func TestRunLimit(t *testing.T) {
	g := &gate{tool: "query_space", entered: make(chan struct{}), open: make(chan struct{})}
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		g.Provider = o.Tools
		o.Tools = g
		o.Limits = server.Limits{MaxRuns: 1}
	}})
	const msg = `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`
	a, b, c := f.session(t, keyAcme), f.session(t, keyAcme), f.session(t, keyGlobex)
	// The first run is asynchronous: answered at once, it keeps its slot
	// while it runs.
	f.expect(t, "POST", "/v1/sessions/"+a+"/messages", keyAcme, msg, answer{status: 202})
	<-g.entered
	limited := answer{429, "1", server.CodeTenantRunLimit, "the tenant has 1 runs in flight, the most it may have; retry when one ends"}
	f.expect(t, "POST", "/v1/sessions/"+b+"/messages", keyAcme, msg, limited)
	f.expect(t, "POST", "/v1/sessions/"+b+"/messages?wait=5m", keyAcme, msg, limited)
	f.expect(t, "POST", "/v1/approvals/ap_unknown", keyAcme, `{"decision":"CONFIRM"}`, limited)
	// Reading is not a run.
	f.expect(t, "GET", "/v1/sessions/"+b, keyAcme, "", answer{status: 200})
	f.expect(t, "POST", "/v1/sessions/"+c+"/messages?wait=5m", keyGlobex, msg, answer{status: 200})
	close(g.open)
	f.settled(t, keyAcme, a, "t1")
	f.expect(t, "POST", "/v1/sessions/"+b+"/messages?wait=5m", keyAcme, msg, answer{status: 200})
}

// settled polls a task until its run has settled it (it is no longer
// RUNNING) and returns it; a minute without is a failure.
func (f *fixture) settled(t *testing.T, key, session, task string) server.Task {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var tk server.Task
		if code, eb := f.do(t, "GET", "/v1/sessions/"+session+"/tasks/"+task, key, "", &tk); code != http.StatusOK {
			t.Fatalf("task %s: %d %+v", task, code, eb)
		}
		if tk.Status != "RUNNING" {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still RUNNING after a minute", task)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOperator: what Operator guards (the metrics, which name every
// tenant) answers an admin or metrics key only.
func TestOperator(t *testing.T) {
	const keyMetrics = "key-metrics"
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) { o.MetricsKeys = []string{keyMetrics} }})
	h := f.srv.Operator(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "tenant=\"acme\"\n") }))
	for _, tt := range []struct {
		name, key string
		status    int
		code, msg string
	}{
		{"admin key", keyAdmin, 200, "", ""},
		{"metrics key", keyMetrics, 200, "", ""},
		{"no key", "", 401, server.CodeUnauthorized, "an admin or metrics key is required"},
		{"unknown key", "nope", 401, server.CodeUnauthorized, "an admin or metrics key is required"},
		{"tenant key", keyAcme, 403, server.CodeForbidden, "this endpoint needs an admin or metrics key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptestRequest("GET", "/metrics", tt.key)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var eb server.ErrorBody
			if rec.Code >= 400 {
				if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil {
					t.Fatal(err)
				}
			} else if !strings.Contains(rec.Body.String(), `tenant="acme"`) {
				t.Fatalf("body %q", rec.Body.String())
			}
			if rec.Code != tt.status || eb.Error.Code != tt.code || eb.Error.Message != tt.msg {
				t.Fatalf("got %d %+v, want %d %s %q", rec.Code, eb, tt.status, tt.code, tt.msg)
			}
		})
	}
	// A metrics key reaches nothing else.
	f.expect(t, "GET", "/admin/v1/slots", keyMetrics, "", answer{401, "", server.CodeUnauthorized, "a valid admin key is required"})
	f.expect(t, "GET", "/v1/sessions", keyMetrics, "", answer{401, "", server.CodeUnauthorized, "a valid tenant API key is required"})
}

func httptestRequest(method, path, key string) *http.Request {
	req := httptest.NewRequest(method, path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}
