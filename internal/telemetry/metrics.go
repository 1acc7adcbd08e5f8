package telemetry

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/agentwarden/warden/host"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsOptions configure NewMetrics.
type MetricsOptions struct {
	// Plugins returns the plugins to report, at each scrape; nil reports
	// none.
	Plugins func() []PluginSample
	// Runtime adds the Go runtime (go_*) and process (process_*)
	// collectors.
	Runtime bool
	// MaxTools bounds the tool label values of one tenant: calls to further
	// tools (a model may invent any name) count under tool="_other". 0
	// means 100.
	MaxTools int
	// PluginTimeRefused returns, per tenant, the plugin calls not started
	// because the tenant had spent its plugin time
	// (host.Host.PluginTimeRefused), at each scrape; nil reports none.
	PluginTimeRefused func() map[string]uint64
	// Compiles returns how the host compiled the modules it had never
	// compiled (host.Host.CompileStats), at each scrape; nil reports none.
	Compiles func() host.CompileStats
}

// Metrics holds Warden's Prometheus metrics in a registry of its own: the
// plugins', the loop's (through Sink) and the HTTP API's (through
// Middleware). Handler serves them. It is safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	maxTools int

	toolCalls   *prometheus.CounterVec
	stalls      *prometheus.CounterVec
	suspensions *prometheus.CounterVec
	nodes       *prometheus.CounterVec
	tasks       *prometheus.CounterVec
	guardPolicy *prometheus.CounterVec

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	httpInFlight prometheus.Gauge

	mu    sync.Mutex
	tools map[string]map[string]bool // tenant → tool label values in use

	model modelMetrics // registered with the first model Model wraps
	// forward counts forwarded requests (Forwarded).
	forward forwardMetrics
}

// NewMetrics registers Warden's metrics in a new registry.
func NewMetrics(o MetricsOptions) (*Metrics, error) {
	if o.MaxTools == 0 {
		o.MaxTools = 100
	}
	if o.MaxTools < 0 {
		return nil, fmt.Errorf("telemetry: MaxTools %d is negative", o.MaxTools)
	}
	m := &Metrics{reg: prometheus.NewRegistry(), maxTools: o.MaxTools, tools: map[string]map[string]bool{}}
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_loop_tool_calls_total",
		Help: "Tool calls by tenant, tool, outcome (SUCCESS, FAILED, REJECTED, DEFERRED, or SKIPPED with the rest of a wave) and code name."},
		[]string{"tenant", "tool", "outcome", "code"})
	m.stalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_loop_stalls_total",
		Help: "No-progress turns counted by the loop (TOOL_OBSERVATION §6)."}, []string{"tenant"})
	m.suspensions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_loop_suspensions_total",
		Help: "Nodes suspended for the user, by kind (FOLLOW_UP, APPROVAL, VERIFY)."}, []string{"tenant", "kind"})
	m.nodes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_loop_nodes_finished_total",
		Help: "Nodes that ended, by status (DONE, FAILED, CANCELLED, SKIPPED)."}, []string{"tenant", "status"})
	m.tasks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_loop_tasks_finished_total",
		Help: "Tasks that ended, by status (DONE, FAILED, CANCELLED)."}, []string{"tenant", "status"})
	m.guardPolicy = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_loop_guard_policy_total",
		Help: "Tenant guard verdicts set aside by their failure policy: shadow decisions (policy shadow, with the outcome the guard decided, PASS included) and guard failures let through (policy fail_open), by tenant, guard ref, outcome and code name."},
		[]string{"tenant", "guard", "policy", "outcome", "code"})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_http_requests_total",
		Help: "HTTP requests by route pattern and status code."}, []string{"route", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "warden_http_request_duration_seconds",
		Help: "HTTP request latency by route pattern (an event stream counts until it closes).", Buckets: prometheus.DefBuckets},
		[]string{"route"})
	m.httpInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "warden_http_requests_in_flight",
		Help: "HTTP requests being served now."})
	b := ReadBuild()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "warden_build_info",
		Help:        "The running binary's version, VCS revision and Go version (always 1).",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion}})
	buildInfo.Set(1)
	cs := []prometheus.Collector{newPluginCollector(o.Plugins), newPluginTimeCollector(o.PluginTimeRefused), newCompileCollector(o.Compiles), m.toolCalls, m.stalls, m.suspensions, m.nodes, m.tasks, m.guardPolicy,
		m.httpRequests, m.httpDuration, m.httpInFlight, buildInfo}
	if o.Runtime {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("telemetry: register: %w", err)
		}
	}
	return m, nil
}

// Registry is the registry the metrics live in, for more collectors and for
// tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format (text,
// unless the scraper negotiates another). A collector that fails leaves its
// metrics out of the scrape rather than failing all of it.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// toolLabel bounds the tool label values of a tenant to maxTools.
func (m *Metrics) toolLabel(tenant, tool string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.tools[tenant]
	if seen == nil {
		seen = map[string]bool{}
		m.tools[tenant] = seen
	}
	if seen[tool] {
		return tool
	}
	if len(seen) >= m.maxTools {
		return "_other"
	}
	seen[tool] = true
	return tool
}
