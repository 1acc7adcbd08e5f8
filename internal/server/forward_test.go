package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

var forwardSecret = []byte(strings.Repeat("k", server.MinForwardSecret))

// forwardPair is two instances on one directory, both forwarding; b is
// started, a too unless asked not to.
func forwardPair(t *testing.T) (a, b *fixture, dir *store.Memory) {
	t.Helper()
	dir = store.NewMemory()
	inst := func(name string) *fixture {
		f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
			o.Directory, o.Instance, o.Lease = dir, name, 10*time.Second
			o.Forward = &server.ForwardOptions{Secret: forwardSecret}
		}})
		if err := f.srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b = inst("a"), inst("b")
	return a, b, dir
}

func hostPort(t *testing.T, url string) string {
	t.Helper()
	return strings.TrimPrefix(url, "http://")
}

// A request for a session another instance serves is answered by that
// instance, relayed as it answered (status, headers, body), the event
// stream included.
func TestForwardRelays(t *testing.T) {
	t.Parallel()
	a, b, _ := forwardPair(t)
	if err := a.srv.Advertise(context.Background(), hostPort(t, a.ts.URL)); err != nil {
		t.Fatal(err)
	}
	id := a.session(t, keyAcme)
	for _, path := range []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/tasks/t9"} {
		codeA, bodyA := a.sendRaw(t, "GET", path, keyAcme, "", nil)
		codeB, bodyB := b.sendRaw(t, "GET", path, keyAcme, "", nil)
		// Each request has its own id; the rest is the same.
		rid := regexp.MustCompile(`"request_id":"[^"]*"`)
		if codeA != codeB || rid.ReplaceAllString(string(bodyA), "") != rid.ReplaceAllString(string(bodyB), "") {
			t.Fatalf("GET %s: a %d %s, b %d %s", path, codeA, bodyA, codeB, bodyB)
		}
	}
	// Another tenant's key is refused by the owner, as it would be there.
	if code, _, eb := b.send(t, "GET", "/v1/sessions/"+id, keyGlobex, ""); code != 404 || eb.Error.Code != server.CodeSessionNotFound {
		t.Fatalf("other tenant through b: %d %+v", code, eb)
	}
	// The stream: its first bytes reach the caller through b at once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.ts.URL+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	first := make([]byte, len(": warden events\n\n"))
	if _, err := io.ReadFull(res.Body, first); err != nil || res.StatusCode != 200 ||
		res.Header.Get("Content-Type") != "text/event-stream" || string(first) != ": warden events\n\n" {
		t.Fatalf("stream through b: %d %q %v", res.StatusCode, first, err)
	}
}

// peer is a stand-in for the owner: it records the hops it gets and
// answers each with answer.
type peer struct {
	mu     sync.Mutex
	hops   []*http.Request
	answer func(w http.ResponseWriter)
	ts     *httptest.Server
}

func newPeer(t *testing.T, answer func(w http.ResponseWriter)) *peer {
	p := &peer{answer: answer}
	p.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hops = append(p.hops, r.Clone(context.Background()))
		p.mu.Unlock()
		p.answer(w)
	}))
	t.Cleanup(p.ts.Close)
	return p
}

func (p *peer) count() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.hops) }

// The hop carries the caller's key, request id and trace context, and a
// signature; an instance that gets a hop for a session it does not serve
// answers not-owner and passes it on to nobody; a signature that does not
// verify is refused.
func TestForwardHop(t *testing.T) {
	t.Parallel()
	a, b, dir := forwardPair(t)
	p := newPeer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Owner", "yes")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"task_not_found","message":"from the owner"}}`)
	})
	// a's peers reach "a" at the stand-in.
	if err := dir.Advertise(context.Background(), "a", hostPort(t, p.ts.URL)); err != nil {
		t.Fatal(err)
	}
	id := a.session(t, keyAcme)
	req, _ := http.NewRequest("GET", b.ts.URL+"/v1/sessions/"+id+"/tasks/t1?x=1", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	req.Header.Set("X-Request-Id", "req-hop-1")
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || string(body) != `{"error":{"code":"task_not_found","message":"from the owner"}}` || res.Header.Get("X-Owner") != "yes" {
		t.Fatalf("relayed: %d %s %v", res.StatusCode, body, res.Header)
	}
	if p.count() != 1 {
		t.Fatalf("hops %d", p.count())
	}
	hop := p.hops[0]
	if hop.URL.RequestURI() != "/v1/sessions/"+id+"/tasks/t1?x=1" || hop.Header.Get("Authorization") != "Bearer "+keyAcme ||
		hop.Header.Get("X-Request-Id") != "req-hop-1" || hop.Header.Get("Warden-Forwarded-By") != "b" ||
		!strings.HasPrefix(hop.Header.Get("Traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-") ||
		hop.Header.Get("Warden-Forward-Signature") == "" {
		t.Fatalf("hop %s %v", hop.URL, hop.Header)
	}

	// The same hop sent to b, which does not serve the session: not-owner,
	// and no second hop.
	send := func(h http.Header, path string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", b.ts.URL+path, nil)
		req.Header = h.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, got := send(hop.Header, hop.URL.RequestURI())
	if res.StatusCode != http.StatusMisdirectedRequest || res.Header.Get("Warden-Forward") != "not-owner" ||
		!strings.Contains(got, `"session_elsewhere"`) || p.count() != 1 {
		t.Fatalf("hop to a non-owner: %d %v %s (hops %d)", res.StatusCode, res.Header, got, p.count())
	}

	bad := func(edit func(h http.Header)) http.Header {
		h := hop.Header.Clone()
		edit(h)
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		path string
	}{
		{"no signature", bad(func(h http.Header) { h.Del("Warden-Forward-Signature") }), hop.URL.RequestURI()},
		{"a signature alone", bad(func(h http.Header) { h.Del("Warden-Forwarded-By") }), hop.URL.RequestURI()},
		{"another sender", bad(func(h http.Header) { h.Set("Warden-Forwarded-By", "c") }), hop.URL.RequestURI()},
		{"another path", hop.Header, "/v1/sessions/" + id + "/tasks/t2?x=1"},
		{"another caller", bad(func(h http.Header) { h.Set("Authorization", "Bearer "+keyGlobex) }), hop.URL.RequestURI()},
		{"another request id", bad(func(h http.Header) { h.Set("X-Request-Id", "req-hop-2") }), hop.URL.RequestURI()},
		{"not hex", bad(func(h http.Header) {
			ts, _, _ := strings.Cut(h.Get("Warden-Forward-Signature"), ".")
			h.Set("Warden-Forward-Signature", ts+".zz")
		}), hop.URL.RequestURI()},
		{"an old one", bad(func(h http.Header) {
			_, sig, _ := strings.Cut(h.Get("Warden-Forward-Signature"), ".")
			h.Set("Warden-Forward-Signature", "1000."+sig)
		}), hop.URL.RequestURI()},
		{"no time", bad(func(h http.Header) { h.Set("Warden-Forward-Signature", "abc") }), hop.URL.RequestURI()},
	}
	for _, tt := range tests {
		res, got := send(tt.h, tt.path)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(got, `"forward_unauthorized"`) {
			t.Errorf("%s: %d %s", tt.name, res.StatusCode, got)
		}
	}

	// A message's hop signs its body: the same body is a hop, another one
	// is refused.
	if code, _, _ := b.send(t, "POST", "/v1/sessions/"+id+"/messages", keyAcme, `{"text":"hello"}`); code != http.StatusNotFound || p.count() != 2 {
		t.Fatalf("message through b: %d (hops %d)", code, p.count())
	}
	post := p.hops[1]
	for _, tt := range []struct {
		body string
		want int
	}{{`{"text":"hello"}`, http.StatusMisdirectedRequest}, {`{"text":"hello!"}`, http.StatusUnauthorized}, {"", http.StatusUnauthorized}} {
		req, _ := http.NewRequest("POST", b.ts.URL+post.URL.RequestURI(), strings.NewReader(tt.body))
		req.Header = post.Header.Clone()
		req.ContentLength = int64(len(tt.body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.want || p.count() != 2 {
			t.Errorf("hop with body %q: %d, want %d (hops %d)", tt.body, res.StatusCode, tt.want, p.count())
		}
	}
}

// A hop that finds the session gone from its owner is looked up once more,
// then the caller gets 503 owner_unreachable with Retry-After; so does one
// whose owner does not answer, or has no address, until its lease ends.
func TestForwardUnreachable(t *testing.T) {
	t.Parallel()
	closed := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	tests := []struct {
		name     string
		addr     func(t *testing.T, p *peer) string
		hops     int
		minRetry int
	}{
		{"not owner twice", func(t *testing.T, p *peer) string { return hostPort(t, p.ts.URL) }, 2, 1},
		// Until a's lease (10 s) ends.
		{"refused", func(t *testing.T, _ *peer) string { return closed(t) }, 0, 9},
		{"no address", func(*testing.T, *peer) string { return "" }, 0, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b, dir := forwardPair(t)
			p := newPeer(t, func(w http.ResponseWriter) {
				w.Header().Set("Warden-Forward", "not-owner")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusMisdirectedRequest)
				io.WriteString(w, `{"error":{"code":"session_elsewhere","message":"x"}}`)
			})
			if addr := tt.addr(t, p); addr != "" {
				if err := dir.Advertise(context.Background(), "a", addr); err != nil {
					t.Fatal(err)
				}
			}
			id := a.session(t, keyAcme)
			code, retryAfter, eb := b.send(t, "POST", "/v1/sessions/"+id+"/messages", keyAcme, `{"text":"hello"}`)
			retry, err := strconv.Atoi(retryAfter)
			if code != http.StatusServiceUnavailable || eb.Error.Code != server.CodeOwnerUnreachable ||
				!strings.Contains(eb.Error.Message, "instance a") || err != nil || retry < tt.minRetry || retry > 10 || p.count() != tt.hops {
				t.Fatalf("%d Retry-After %q %+v (hops %d)", code, retryAfter, eb, p.count())
			}
		})
	}
}

// Forwarding off: 409 session_elsewhere naming the owner, as before.
func TestForwardOff(t *testing.T) {
	t.Parallel()
	dir := store.NewMemory()
	inst := func(name string) *fixture {
		f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
			o.Directory, o.Instance, o.Lease = dir, name, 10*time.Second
		}})
		if err := f.srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := inst("a"), inst("b")
	id := a.session(t, keyAcme)
	if code, _, eb := b.send(t, "GET", "/v1/sessions/"+id, keyAcme, ""); code != 409 || eb.Error.Code != server.CodeSessionElsewhere ||
		!strings.Contains(eb.Error.Message, "instance a") {
		t.Fatalf("%d %+v", code, eb)
	}
}

func TestForwardOptionsChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    server.ForwardOptions
		want string
	}{
		{"short secret", server.ForwardOptions{Secret: []byte("short")}, "the forwarding secret has 5 bytes; it needs at least 32"},
		{"negative timeout", server.ForwardOptions{Secret: forwardSecret, Timeout: -time.Second}, "negative forwarding timeout"},
	}
	f := newFixture(t)
	for _, tt := range tests {
		_, err := server.New(server.Options{Keys: map[string]string{keyAcme: "acme"}, Loop: loop.DefaultConfig(),
			Agents: agentsFunc(func(context.Context, string) (server.Agent, error) { return server.Agent{}, nil }),
			Tools:  f.tools, NewModel: func(string, string) (model.Model, error) { return nil, nil }, Forward: &tt.o})
		if !errors.Is(err, server.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", "[::]:8080", ":8080", "10.0.0.1:0", "10.0.0.1"} {
		if err := f.srv.Advertise(context.Background(), addr); !errors.Is(err, server.ErrConfig) {
			t.Errorf("advertise %s: %v", addr, err)
		}
	}
}

// A hop is a client span, the child of the request's and the parent of
// the owner's (its traceparent), naming both instances and the outcome.
func TestForwardSpan(t *testing.T) {
	t.Parallel()
	a, b, dir := forwardPair(t)
	p := newPeer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"task_not_found","message":"from the owner"}}`)
	})
	if err := dir.Advertise(context.Background(), "a", hostPort(t, p.ts.URL)); err != nil {
		t.Fatal(err)
	}
	id := a.session(t, keyAcme)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	traced := httptest.NewServer(otelhttp.NewHandler(b.srv.Handler(), "b", otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{})))
	defer traced.Close()
	req, _ := http.NewRequest("GET", traced.URL+"/v1/sessions/"+id+"/tasks/t1", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var hop sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "forward" {
			hop = s
		}
	}
	if hop == nil || p.count() != 1 {
		t.Fatalf("no forward span (hops %d)", p.count())
	}
	attrs := map[string]string{}
	for _, kv := range hop.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + hop.SpanContext().SpanID().String() + "-01"
	if hop.SpanKind() != trace.SpanKindClient || hop.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		attrs["warden.forward.from"] != "b" || attrs["warden.forward.to"] != "a" || attrs["warden.forward.outcome"] != "relayed" ||
		attrs["http.response.status_code"] != "404" || p.hops[0].Header.Get("Traceparent") != want {
		t.Fatalf("span %s %s %v; hop traceparent %s, want %s", hop.SpanKind(), hop.SpanContext().TraceID(), attrs, p.hops[0].Header.Get("Traceparent"), want)
	}
}
