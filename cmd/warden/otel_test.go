package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/telemetry"
)

// An incoming traceparent: the trace the request belongs to and the
// caller's span, which the request's server span is the child of.
const (
	incomingTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingParent = "00f067aa0ba902b7"
	traceparent    = "00-" + incomingTrace + "-" + incomingParent + "-01"
)

// TestTraceHTTP checks the request span traceHTTP makes: the child of the
// incoming traceparent, named by the route pattern, labelled with the
// session and task the route or the answer's Location names.
func TestTraceHTTP(t *testing.T) {
	t.Parallel()
	if _, err := telemetry.SetupTracing("none"); err != nil { // the propagators
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions/{session}/messages", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/v1/sessions/"+r.PathValue("session")+"/tasks/t3")
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET /v1/sessions/{session}/tasks/{task}", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/", http.NotFound)
	srv := httptest.NewServer(traceHTTPTo(tp, mux))
	defer srv.Close()
	tests := []struct {
		method, path string
		want         string
	}{
		{"POST", "/v1/sessions/s-1/messages",
			"POST /v1/sessions/{session}/messages server 202 warden.session=s-1 warden.task.key=s-1/t3 warden.task=t3"},
		{"GET", "/v1/sessions/s-2/tasks/t1", "GET /v1/sessions/{session}/tasks/{task} server 200 warden.session=s-2 warden.task.key=s-2/t1 warden.task=t1"},
		{"GET", "/healthz", "GET /healthz server 200"},
		{"GET", "/nothing", "GET / server 404"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		req.Header.Set("traceparent", traceparent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var got []string
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() != incomingTrace || s.Parent().SpanID().String() != incomingParent || !s.Parent().IsRemote() {
			t.Errorf("%s: trace %s parent %s, want %s %s", s.Name(), s.SpanContext().TraceID(), s.Parent().SpanID(), incomingTrace, incomingParent)
		}
		line := []string{s.Name(), s.SpanKind().String()}
		var labels []string
		for _, kv := range s.Attributes() {
			switch {
			case kv.Key == "http.response.status_code":
				line = append(line, kv.Value.Emit())
			case strings.HasPrefix(string(kv.Key), "warden."):
				labels = append(labels, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
			}
		}
		sort.Strings(labels)
		got = append(got, strings.Join(append(line, labels...), " "))
	}
	var want []string
	for _, tt := range tests {
		want = append(want, tt.want)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spans\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// collectorBin builds tools/otelcol, the test collector, once per digest
// of its go.mod, go.sum and main.go into the user cache, so that only the
// first run on a machine pays for it (minutes: the collector has hundreds
// of packages).
func collectorBin(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "otelcol"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	// The user's cache, not the tests' (bin/cache): a fresh clone of the
	// repository on the same machine finds it too.
	root, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "warden", "otelcol", hex.EncodeToString(h.Sum(nil))[:16], "otelcol")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly -buildvcs=false", "GOWORK=off") // as .ci/run compiles it
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the collector: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the collector in %s", time.Since(start).Round(time.Second))
	return bin
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// sink is an OTLP/HTTP traces endpoint keeping every span it is sent.
type sink struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("%s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	s.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// trace returns the spans of trace id it holds.
func (s *sink) trace(id string) []*tracepb.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*tracepb.Span
	for _, sp := range s.spans {
		if hex.EncodeToString(sp.TraceId) == id {
			out = append(out, sp)
		}
	}
	return out
}

func attr(sp *tracepb.Span, key string) string {
	for _, kv := range sp.Attributes {
		if kv.Key == key {
			return anyValue(kv.Value)
		}
	}
	return ""
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyValue(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(v.GetValue())
}

// outline renders a trace as an indented tree, children in start order,
// each span with the attributes of keys it has.
func outline(spans []*tracepb.Span, keys ...string) string {
	children := map[string][]*tracepb.Span{}
	ids := map[string]bool{}
	for _, sp := range spans {
		ids[hex.EncodeToString(sp.SpanId)] = true
	}
	for _, sp := range spans {
		p := hex.EncodeToString(sp.ParentSpanId)
		if !ids[p] {
			p = "" // the trace's roots here: the remote caller is not exported
		}
		children[p] = append(children[p], sp)
	}
	for _, c := range children {
		sort.SliceStable(c, func(i, j int) bool { return c[i].StartTimeUnixNano < c[j].StartTimeUnixNano })
	}
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, sp := range children[parent] {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), sp.Name)
			for _, k := range keys {
				if v := attr(sp, k); v != "" {
					fmt.Fprintf(&b, " %s=%s", k, v)
				}
			}
			b.WriteString("\n")
			walk(hex.EncodeToString(sp.SpanId), depth+1)
		}
	}
	walk("", 0)
	return b.String()
}

// TestCollectorTrace runs warden serve exporting to a real OpenTelemetry
// Collector (tools/otelcol), which forwards to a sink here, sends a
// message with a traceparent and reads that task's span tree back: the
// incoming trace kept, HTTP server span → task → node → model calls and
// tool calls → the MCP call and the plugin calls, every span under the
// task naming its tenant, session, task and task key.
func TestCollectorTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a collector, warden and the example MCP server")
	}
	t.Parallel()
	col := collectorBin(t)
	warden := buildBin(t, "warden", ".")
	cms := buildBin(t, "mcp-cms", "../../examples/mcp-cms")

	sk := &sink{}
	sinkSrv := httptest.NewServer(sk)
	defer sinkSrv.Close()
	recv := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "otelcol.yaml")
	writeFile(t, cfg, `receivers:
  otlp:
    protocols:
      http:
        endpoint: `+recv+`
exporters:
  otlphttp:
    traces_endpoint: `+sinkSrv.URL+`/v1/traces
    compression: none
    retry_on_failure:
      enabled: false
    sending_queue:
      num_consumers: 1
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [otlphttp]
`)
	start(t, regexp.MustCompile(`(Everything is ready)`), col, "--config", "file:"+cfg)

	prov := fakeprovider.New(t,
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "c1", Name: "query_space", Arguments: `{"spaceId":"sp-1"}`}},
			Usage: &fakeprovider.Usage{Prompt: 900, Completion: 20}},
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "c2", Name: "builtin_node_finish", Arguments: `{"output":"found Marketing"}`}},
			Usage: &fakeprovider.Usage{Prompt: 1000, Completion: 15}},
	)
	skills, keys, _ := serveFixture(t)
	// Spans leave warden every 100 ms rather than every 5 s.
	srv, base := startEnv(t, []string{"OTEL_BSP_SCHEDULE_DELAY=100"}, regexp.MustCompile(`serving on (http://\S+)`), warden,
		"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "openai",
		"--base-url", prov.BaseURL(), "--model-name", "gpt-test", "--model-max-retries", "0",
		"--tools", "mcp-command", "--mcp-command", cms, "--trace", "otlp:http://"+recv+"/v1/traces")

	var sess struct{ ID string }
	if code := apiCall(t, base, "POST", "/v1/sessions", tenantKey, "", &sess); code != http.StatusCreated {
		t.Fatalf("create session: %d", code)
	}
	req, _ := http.NewRequest("POST", base+"/v1/sessions/"+sess.ID+"/messages", strings.NewReader(`{"text":"find Marketing"}`))
	req.Header.Set("Authorization", "Bearer "+tenantKey)
	req.Header.Set("traceparent", traceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("message: %d\n%s", resp.StatusCode, srv.out.String())
	}
	// 202 answers at once: the task settles later.
	var task struct{ Status string }
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code := apiCall(t, base, "GET", "/v1/sessions/"+sess.ID+"/tasks/t1", tenantKey, "", &task); code == http.StatusOK && task.Status != "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task t1 still %q\n%s", task.Status, srv.out.String())
		}
	}
	if task.Status != "DONE" {
		t.Fatalf("task t1 %s\n%s", task.Status, srv.out.String())
	}

	const (
		httpSpan = "POST /v1/sessions/{session}/messages"
		node     = httpSpan + " > warden.task > warden.node"
	)
	wantPaths := []string{
		httpSpan + " > warden.task",
		node + " > chat gpt-test",
		node + " > warden.tool_call",
		node + " > warden.tool_call > tools/call query_space",
		node + " > warden.tool_call > warden.plugin_call",
	}
	var (
		spans []*tracepb.Span
		byID  map[string]*tracepb.Span
	)
	parent := func(sp *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(sp.ParentSpanId)] }
	// path names a span's ancestors and itself, root first.
	path := func(sp *tracepb.Span) string {
		var names []string
		for ; sp != nil; sp = parent(sp) {
			names = append([]string{sp.Name}, names...)
		}
		return strings.Join(names, " > ")
	}
	// missing lists the paths not seen yet: the collector's batches need
	// not arrive in the order warden sent them.
	missing := func() []string {
		spans = sk.trace(incomingTrace)
		byID = map[string]*tracepb.Span{}
		for _, sp := range spans {
			byID[hex.EncodeToString(sp.SpanId)] = sp
		}
		seen := map[string]bool{}
		for _, sp := range spans {
			seen[path(sp)] = true
		}
		var out []string
		for _, p := range wantPaths {
			if !seen[p] {
				out = append(out, p)
			}
		}
		return out
	}
	for deadline := time.Now().Add(60 * time.Second); len(missing()) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the collector forwarded no span %q of trace %s; it forwarded:\n%s\nwarden's output:\n%s",
				missing(), incomingTrace, outline(spans), srv.out.String())
		}
	}
	t.Logf("trace %s:\n%s", incomingTrace, outline(spans, "warden.task.key", "warden.tool", "warden.plugin", "gen_ai.usage.input_tokens", "warden.mcp.outcome"))
	for _, sp := range spans {
		p := path(sp)
		switch {
		case sp.Name == httpSpan:
			if hex.EncodeToString(sp.ParentSpanId) != incomingParent || sp.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("%s: parent %x kind %s, want the caller's span %s and a server span", sp.Name, sp.ParentSpanId, sp.Kind, incomingParent)
			}
			if attr(sp, "warden.tenant") != "acme" || attr(sp, "warden.session") != sess.ID || attr(sp, "warden.task") != "t1" {
				t.Errorf("%s: tenant %q session %q task %q", sp.Name, attr(sp, "warden.tenant"), attr(sp, "warden.session"), attr(sp, "warden.task"))
			}
		case strings.HasPrefix(p, httpSpan+" > warden.task"):
			for k, v := range map[string]string{"warden.tenant": "acme", "warden.session": sess.ID, "warden.task": "t1", "warden.task.key": sess.ID + "/t1"} {
				if got := attr(sp, k); got != v {
					t.Errorf("%s: %s=%q, want %q", p, k, got, v)
				}
			}
		case parent(sp) == nil:
			t.Errorf("span %s is outside the request's tree", sp.Name)
		}
	}
	for _, sp := range spans {
		if sp.Name == "chat gpt-test" && attr(sp, "gen_ai.usage.input_tokens") == "" {
			t.Errorf("model span without token usage: %v", sp.Attributes)
		}
	}
	// The task's log records carry its trace.
	logged := func(kind string) bool {
		for _, line := range strings.Split(srv.out.String(), "\n") {
			if strings.Contains(line, `"msg":"loop event"`) && strings.Contains(line, `"kind":"`+kind+`"`) &&
				strings.Contains(line, `"trace_id":"`+incomingTrace+`"`) {
				return true
			}
		}
		return false
	}
	// The output comes through a pipe that can lag.
	for _, kind := range []string{"TASK", "NODE", "TOOL"} {
		for deadline := time.Now().Add(30 * time.Second); !logged(kind); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("no %s log record carries trace %s", kind, incomingTrace)
				break
			}
		}
	}
	if t.Failed() {
		t.Logf("warden's output:\n%s", srv.out.String())
	}

	// An exporter pointed at a closed port: the failed export is a JSON
	// log record, not plain text on standard error. The plugins' load
	// checks at start make the spans to export.
	closed := freeAddr(t)
	down, _ := startEnv(t, []string{"OTEL_BSP_SCHEDULE_DELAY=100"}, regexp.MustCompile(`serving on (http://\S+)`), warden,
		"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "openai",
		"--base-url", prov.BaseURL(), "--model-name", "gpt-test", "--tools", "mcp-command", "--mcp-command", cms,
		"--trace", "otlp:http://"+closed+"/v1/traces")
	exportFailed := func() []string {
		var lines []string
		for _, line := range strings.Split(down.out.String(), "\n") {
			if strings.Contains(line, closed) {
				lines = append(lines, line)
			}
		}
		return lines
	}
	for deadline := time.Now().Add(60 * time.Second); len(exportFailed()) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no failed export logged:\n%s", down.out.String())
		}
	}
	for _, line := range exportFailed() {
		var rec struct{ Level, Msg, Err string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level != "ERROR" || rec.Msg != telemetry.OTelErrorMessage ||
			!strings.Contains(rec.Err, "connection refused") {
			t.Errorf("failed export logged as %q, want a JSON record %q at ERROR", line, telemetry.OTelErrorMessage)
		}
	}
}

// TestSelfTestSpan checks that the plugin calls of the start's loading
// share one root span, and that a failed load makes it an error.
func TestSelfTestSpan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"loaded", nil, "warden.selftest Unset\n  warden.plugin_call\n  warden.plugin_call\n"},
		{"refused", errors.New("server: candidate self-test failed"), "warden.selftest Error\n  warden.plugin_call\n  warden.plugin_call\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			err := selfTestedTo(context.Background(), tp, func(ctx context.Context) error {
				for range 2 {
					_, span := tp.Tracer("host").Start(ctx, "warden.plugin_call")
					span.End()
				}
				return tt.err
			})
			if err != tt.err {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			var b strings.Builder
			for _, s := range slices.Backward(rec.Ended()) {
				if s.Parent().IsValid() {
					fmt.Fprintf(&b, "  %s\n", s.Name())
				} else {
					b.WriteString(s.Name() + " " + s.Status().Code.String() + "\n")
				}
			}
			if b.String() != tt.want {
				t.Fatalf("spans\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}
