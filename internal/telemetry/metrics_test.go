package telemetry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/loop"
)

func newMetrics(t *testing.T, o telemetry.MetricsOptions) *telemetry.Metrics {
	t.Helper()
	m, err := telemetry.NewMetrics(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scrape reads the metrics through the handler, as Prometheus would.
func scrape(t *testing.T, m *telemetry.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// series keeps the lines of an exposition that are samples of names starting
// with prefix, sorted.
func series(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// sorted sorts the lines of want, as series sorts what it keeps.
func sorted(want string) string {
	lines := strings.Split(want, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestPluginMetrics(t *testing.T) {
	t.Parallel()
	argpolicy := host.Stats{Plugin: "argpolicy@1.2.0", Digest: "ab12",
		Pass: 90, Success: 0, Failed: 0, Rejected: 6, Deferred: 0,
		Traps: 2, Timeouts: 1, MemoryLimits: 1, Violations: 3, OutputTooLarge: 0, InputTooLarge: 4, Unavailable: 5,
		FailOpen: 7, ShadowDiffers: 8,
		InstancesLive: 3, InstancesIdle: 2, InstancesCreated: 5, InstancesClosed: 2, InFlight: 1,
		InstancesEvicted: 1, InstancesReclaimed: 1, InstancesMemoryBytes: 6 << 20, BudgetWaits: 4, BudgetRefused: 1,
		Calls: 103, TotalLatency: 1500 * time.Millisecond,
		Latency:     []uint64{10, 20, 30, 40, 0, 0, 0, 0, 0, 1, 1, 1},
		MemoryPages: 1024, InstanceMemoryBytes: 2 << 20}
	builtin := host.Stats{Plugin: "control@1.0.0", Digest: "cd34", Success: 2, Failed: 1,
		Calls: 3, TotalLatency: 30 * time.Microsecond, Latency: []uint64{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, MemoryPages: 512}
	m := newMetrics(t, telemetry.MetricsOptions{Plugins: func() []telemetry.PluginSample {
		return []telemetry.PluginSample{
			{Plugin: "ArgPolicy", Generation: 3, Stats: argpolicy},
			{Plugin: "ArgPolicy", Generation: 3, Stats: builtin}, // a duplicate: dropped
			{Stats: builtin},
		}
	}})
	want := `warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="1e-05"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="5e-05"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.0001"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.0005"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.001"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.005"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.01"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.05"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.1"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="0.5"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="1"} 3
warden_plugin_call_duration_seconds_bucket{generation="0",plugin="control@1.0.0",le="+Inf"} 3
warden_plugin_call_duration_seconds_sum{generation="0",plugin="control@1.0.0"} 3e-05
warden_plugin_call_duration_seconds_count{generation="0",plugin="control@1.0.0"} 3
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="1e-05"} 10
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="5e-05"} 30
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.0001"} 60
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.0005"} 100
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.001"} 100
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.005"} 100
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.01"} 100
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.05"} 100
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.1"} 100
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="0.5"} 101
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="1"} 102
warden_plugin_call_duration_seconds_bucket{generation="3",plugin="ArgPolicy",le="+Inf"} 103
warden_plugin_call_duration_seconds_sum{generation="3",plugin="ArgPolicy"} 1.5
warden_plugin_call_duration_seconds_count{generation="3",plugin="ArgPolicy"} 103
warden_plugin_calls_total{generation="0",outcome="contract_violation",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="deferred",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="failed",plugin="control@1.0.0"} 1
warden_plugin_calls_total{generation="0",outcome="input_too_large",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="memory_limit",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="output_too_large",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="pass",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="rejected",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="success",plugin="control@1.0.0"} 2
warden_plugin_calls_total{generation="0",outcome="timeout",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="trap",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="0",outcome="unavailable",plugin="control@1.0.0"} 0
warden_plugin_calls_total{generation="3",outcome="contract_violation",plugin="ArgPolicy"} 3
warden_plugin_calls_total{generation="3",outcome="deferred",plugin="ArgPolicy"} 0
warden_plugin_calls_total{generation="3",outcome="failed",plugin="ArgPolicy"} 0
warden_plugin_calls_total{generation="3",outcome="input_too_large",plugin="ArgPolicy"} 4
warden_plugin_calls_total{generation="3",outcome="memory_limit",plugin="ArgPolicy"} 1
warden_plugin_calls_total{generation="3",outcome="output_too_large",plugin="ArgPolicy"} 0
warden_plugin_calls_total{generation="3",outcome="pass",plugin="ArgPolicy"} 90
warden_plugin_calls_total{generation="3",outcome="rejected",plugin="ArgPolicy"} 6
warden_plugin_calls_total{generation="3",outcome="success",plugin="ArgPolicy"} 0
warden_plugin_calls_total{generation="3",outcome="timeout",plugin="ArgPolicy"} 1
warden_plugin_calls_total{generation="3",outcome="trap",plugin="ArgPolicy"} 2
warden_plugin_calls_total{generation="3",outcome="unavailable",plugin="ArgPolicy"} 5
warden_plugin_failure_policy_total{action="fail_open",generation="0",plugin="control@1.0.0"} 0
warden_plugin_failure_policy_total{action="fail_open",generation="3",plugin="ArgPolicy"} 7
warden_plugin_failure_policy_total{action="shadow_differs",generation="0",plugin="control@1.0.0"} 0
warden_plugin_failure_policy_total{action="shadow_differs",generation="3",plugin="ArgPolicy"} 8
warden_plugin_in_flight{generation="0",plugin="control@1.0.0"} 0
warden_plugin_in_flight{generation="3",plugin="ArgPolicy"} 1
warden_plugin_info{digest="ab12",generation="3",plugin="ArgPolicy",ref="argpolicy@1.2.0"} 1
warden_plugin_info{digest="cd34",generation="0",plugin="control@1.0.0",ref="control@1.0.0"} 1
warden_plugin_instance_memory_bytes{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instance_memory_bytes{generation="3",plugin="ArgPolicy"} 2.097152e+06
warden_plugin_instances_closed_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_closed_total{generation="3",plugin="ArgPolicy"} 2
warden_plugin_instances_created_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_created_total{generation="3",plugin="ArgPolicy"} 5
warden_plugin_instances_idle{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_idle{generation="3",plugin="ArgPolicy"} 2
warden_plugin_instances_live{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_live{generation="3",plugin="ArgPolicy"} 3
warden_plugin_memory_limit_pages{generation="0",plugin="control@1.0.0"} 512
warden_plugin_memory_limit_pages{generation="3",plugin="ArgPolicy"} 1024
warden_plugin_timeouts_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_timeouts_total{generation="3",plugin="ArgPolicy"} 1
warden_plugin_traps_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_traps_total{generation="3",plugin="ArgPolicy"} 2
warden_plugin_budget_refused_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_budget_refused_total{generation="3",plugin="ArgPolicy"} 1
warden_plugin_budget_waits_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_budget_waits_total{generation="3",plugin="ArgPolicy"} 4
warden_plugin_instances_evicted_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_evicted_total{generation="3",plugin="ArgPolicy"} 1
warden_plugin_instances_memory_bytes{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_memory_bytes{generation="3",plugin="ArgPolicy"} 6.291456e+06
warden_plugin_instances_reclaimed_total{generation="0",plugin="control@1.0.0"} 0
warden_plugin_instances_reclaimed_total{generation="3",plugin="ArgPolicy"} 1`
	if got := series(scrape(t, m), "warden_plugin_"); got != sorted(want) {
		t.Fatalf("plugin series:\n%s\nwant:\n%s", got, sorted(want))
	}
	if problems, err := testutil.GatherAndLint(m.Registry()); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestLoopMetrics feeds one session's events, as the loop emits them, and
// checks every loop series.
func TestLoopMetrics(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{})
	acme, beta := m.Sink("acme"), m.Sink("beta")
	events := []loop.Event{
		{Kind: loop.KindTask, Task: "t1", Status: "PLANNED"},
		{Kind: loop.KindNode, Task: "t1", Node: "t1.a", Status: "RUNNING"},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "query_space", Outcome: "SUCCESS"},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "create_site", Outcome: "REJECTED", Name: "ARG_SOURCE_UNTRUSTED", Stalls: 1},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "query_site", Status: "SKIPPED", Stalls: 1},
		{Kind: loop.KindReact, Task: "t1", Node: "t1.a", Status: "no_tool_calls", Stalls: 2},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "query_space", Outcome: "SUCCESS"},
		{Kind: loop.KindGuard, Task: "t1", Node: "t1.a", Tool: "create_site", Guard: "domainguard@0.1.0", Status: "SHADOW", Outcome: "REJECTED", Name: "ARG_REJECTED"},
		{Kind: loop.KindGuard, Task: "t1", Node: "t1.a", Tool: "create_site", Guard: "audit@1.0.0", Status: "SHADOW", Outcome: "PASS"},
		{Kind: loop.KindGuard, Task: "t1", Node: "t1.a", Tool: "create_site", Guard: "trapguard@1.0.0", Status: "FAIL_OPEN", Outcome: "REJECTED", Name: "PLUGIN_TRAP", Level: "WARN"},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "create_site", Outcome: "DEFERRED", Name: "APPROVAL_REQUIRED"},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "builtin_node_approval", Outcome: "SUCCESS"},
		{Kind: loop.KindSuspend, Task: "t1", Node: "t1.a", Tool: "create_site", Status: "APPROVAL"},
		{Kind: loop.KindTask, Task: "t1", Status: "SUSPENDED"},
		{Kind: loop.KindResume, Task: "t1", Node: "t1.a", Tool: "create_site", Status: "APPROVAL"},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "create_site", Outcome: "FAILED", Name: "TOOL_TIMEOUT", Stalls: 1},
		{Kind: loop.KindSuspend, Task: "t1", Node: "t1.a", Tool: "create_site", Status: "VERIFY", Stalls: 1},
		{Kind: loop.KindResume, Task: "t1", Node: "t1.a", Tool: "create_site", Status: "VERIFY", Stalls: 1},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.a", Tool: "builtin_node_finish", Outcome: "REJECTED", Name: "FINISH_NEED_TARGET", Stalls: 2},
		{Kind: loop.KindNode, Task: "t1", Node: "t1.a", Status: "FAILED", Stalls: 2},
		{Kind: loop.KindTask, Task: "t1", Status: "FAILED"},
	}
	for _, e := range events {
		acme.Emit(e)
	}
	// A node resumed by a new session (after a restart) brings its count:
	// only the rise after its first event is counted.
	for _, e := range []loop.Event{
		{Kind: loop.KindResume, Task: "t2", Node: "t2.a", Status: "FOLLOW_UP", Stalls: 3},
		{Kind: loop.KindReact, Task: "t2", Node: "t2.a", Status: "no_tool_calls", Stalls: 4},
		{Kind: loop.KindSuspend, Task: "t2", Node: "t2.a", Status: "FOLLOW_UP", Stalls: 4},
		{Kind: loop.KindTask, Task: "t2", Status: "CANCELLED"},
	} {
		beta.Emit(e)
	}
	want := `warden_loop_guard_policy_total{code="",guard="audit@1.0.0",outcome="PASS",policy="shadow",tenant="acme"} 1
warden_loop_guard_policy_total{code="ARG_REJECTED",guard="domainguard@0.1.0",outcome="REJECTED",policy="shadow",tenant="acme"} 1
warden_loop_guard_policy_total{code="PLUGIN_TRAP",guard="trapguard@1.0.0",outcome="REJECTED",policy="fail_open",tenant="acme"} 1
warden_loop_nodes_finished_total{status="FAILED",tenant="acme"} 1
warden_loop_stalls_total{tenant="acme"} 4
warden_loop_stalls_total{tenant="beta"} 1
warden_loop_suspensions_total{kind="APPROVAL",tenant="acme"} 1
warden_loop_suspensions_total{kind="VERIFY",tenant="acme"} 1
warden_loop_suspensions_total{kind="FOLLOW_UP",tenant="beta"} 1
warden_loop_tasks_finished_total{status="FAILED",tenant="acme"} 1
warden_loop_tasks_finished_total{status="CANCELLED",tenant="beta"} 1
warden_loop_tool_calls_total{code="",outcome="SUCCESS",tenant="acme",tool="builtin_node_approval"} 1
warden_loop_tool_calls_total{code="FINISH_NEED_TARGET",outcome="REJECTED",tenant="acme",tool="builtin_node_finish"} 1
warden_loop_tool_calls_total{code="APPROVAL_REQUIRED",outcome="DEFERRED",tenant="acme",tool="create_site"} 1
warden_loop_tool_calls_total{code="ARG_SOURCE_UNTRUSTED",outcome="REJECTED",tenant="acme",tool="create_site"} 1
warden_loop_tool_calls_total{code="TOOL_TIMEOUT",outcome="FAILED",tenant="acme",tool="create_site"} 1
warden_loop_tool_calls_total{code="",outcome="SKIPPED",tenant="acme",tool="query_site"} 1
warden_loop_tool_calls_total{code="",outcome="SUCCESS",tenant="acme",tool="query_space"} 2`
	if got := series(scrape(t, m), "warden_loop_"); got != sorted(want) {
		t.Fatalf("loop series:\n%s\nwant:\n%s", got, sorted(want))
	}
}

// TestToolLabelCap checks that a tenant's tool names beyond MaxTools, and
// names that are too long or not UTF-8, stay bounded label values.
func TestToolLabelCap(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{MaxTools: 2})
	acme, beta := m.Sink("acme"), m.Sink("beta")
	for _, tool := range []string{"a", "b", "invented_1", "invented_2", "a"} {
		acme.Emit(loop.Event{Kind: loop.KindTool, Tool: tool, Outcome: "REJECTED", Name: "CATALOG_DENIED"})
	}
	beta.Emit(loop.Event{Kind: loop.KindTool, Tool: strings.Repeat("x", 63) + "工具", Outcome: "REJECTED", Name: "CATALOG_DENIED"})
	beta.Emit(loop.Event{Kind: loop.KindTool, Tool: "bad\xffname", Outcome: "REJECTED", Name: "CATALOG_DENIED"})
	want := `warden_loop_tool_calls_total{code="CATALOG_DENIED",outcome="REJECTED",tenant="acme",tool="_other"} 2
warden_loop_tool_calls_total{code="CATALOG_DENIED",outcome="REJECTED",tenant="acme",tool="a"} 2
warden_loop_tool_calls_total{code="CATALOG_DENIED",outcome="REJECTED",tenant="acme",tool="b"} 1
warden_loop_tool_calls_total{code="CATALOG_DENIED",outcome="REJECTED",tenant="beta",tool="badname"} 1
warden_loop_tool_calls_total{code="CATALOG_DENIED",outcome="REJECTED",tenant="beta",tool="` + strings.Repeat("x", 63) + `"} 1`
	if got := series(scrape(t, m), "warden_loop_tool_calls_total"); got != sorted(want) {
		t.Fatalf("tool series:\n%s\nwant:\n%s", got, sorted(want))
	}
}

func TestNewMetricsRejectsNegativeMaxTools(t *testing.T) {
	t.Parallel()
	_, err := telemetry.NewMetrics(telemetry.MetricsOptions{MaxTools: -1})
	if err == nil || err.Error() != "telemetry: MaxTools -1 is negative" {
		t.Fatalf("error %v", err)
	}
}

// TestMiddleware serves requests through a mux behind the middleware and
// checks the counts by route pattern and status code.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/{session}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("session") == "missing" {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, "{}")
	})
	mux.HandleFunc("GET /v1/sessions/{session}/events", func(w http.ResponseWriter, _ *http.Request) {
		if _, ok := w.(http.Flusher); !ok {
			t.Error("the middleware hides http.Flusher")
		}
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
	})
	mux.HandleFunc("POST /v1/sessions", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	srv := httptest.NewServer(m.Middleware(mux))
	t.Cleanup(srv.Close)
	requests := []struct {
		method, path string
		code         int
	}{
		{"GET", "/v1/sessions/s1", 200},
		{"GET", "/v1/sessions/s2", 200},
		{"GET", "/v1/sessions/missing", 404},
		{"GET", "/v1/sessions/s1/events", 200},
		{"POST", "/v1/sessions", 201},
		{"GET", "/nowhere", 404},
		{"DELETE", "/v1/sessions", 405},
	}
	for _, rq := range requests {
		req, err := http.NewRequest(rq.method, srv.URL+rq.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != rq.code {
			t.Fatalf("%s %s: %d, want %d", rq.method, rq.path, resp.StatusCode, rq.code)
		}
	}
	text := scrape(t, m)
	want := `warden_http_requests_total{code="200",route="GET /v1/sessions/{session}"} 2
warden_http_requests_total{code="404",route="GET /v1/sessions/{session}"} 1
warden_http_requests_total{code="200",route="GET /v1/sessions/{session}/events"} 1
warden_http_requests_total{code="201",route="POST /v1/sessions"} 1
warden_http_requests_total{code="404",route="unmatched"} 1
warden_http_requests_total{code="405",route="unmatched"} 1`
	if got := series(text, "warden_http_requests_total"); got != sorted(want) {
		t.Fatalf("request series:\n%s\nwant:\n%s", got, sorted(want))
	}
	wantCounts := `warden_http_request_duration_seconds_count{route="GET /v1/sessions/{session}"} 3
warden_http_request_duration_seconds_count{route="GET /v1/sessions/{session}/events"} 1
warden_http_request_duration_seconds_count{route="POST /v1/sessions"} 1
warden_http_request_duration_seconds_count{route="unmatched"} 2`
	if got := series(text, "warden_http_request_duration_seconds_count"); got != sorted(wantCounts) {
		t.Fatalf("latency counts:\n%s\nwant:\n%s", got, sorted(wantCounts))
	}
	if got := series(text, "warden_http_requests_in_flight"); got != "warden_http_requests_in_flight 0" {
		t.Fatalf("in flight: %s", got)
	}
}
