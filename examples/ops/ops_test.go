package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/loop"
)

// promtool finds promtool: a missing one fails the test under CI=true
// (.ci/run installs Debian's prometheus package) and skips it elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required under CI (Debian package prometheus): %v", err)
		}
		t.Skipf("promtool not installed: %v", err)
	}
	return p
}

func runTool(t *testing.T, dir string, stdin []byte, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAlertRules checks the rules and runs their unit tests.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	pt := promtool(t)
	runTool(t, "prometheus", nil, pt, "check", "rules", "alerts.yml")
	runTool(t, "prometheus", nil, pt, "test", "rules", "alerts_test.yml")
}

// wardenFamilies are the metric families Warden exports (internal/telemetry):
// the scrape must show every one, so that the names the dashboard and the
// rules use are checked against all of them.
var wardenFamilies = []string{
	"warden_build_info",
	"warden_http_request_duration_seconds", "warden_http_requests_in_flight", "warden_http_requests_total",
	"warden_loop_guard_policy_total", "warden_loop_nodes_finished_total", "warden_loop_stalls_total", "warden_loop_suspensions_total",
	"warden_loop_tasks_finished_total", "warden_loop_tool_calls_total",
	"warden_model_failures_total", "warden_model_tokens_total",
	"warden_plugin_budget_refused_total", "warden_plugin_budget_waits_total",
	"warden_plugin_call_duration_seconds", "warden_plugin_calls_total", "warden_plugin_failure_policy_total",
	"warden_plugin_in_flight", "warden_plugin_info", "warden_plugin_instance_memory_bytes",
	"warden_plugin_instances_closed_total", "warden_plugin_instances_created_total", "warden_plugin_instances_evicted_total",
	"warden_plugin_instances_idle", "warden_plugin_instances_live", "warden_plugin_instances_memory_bytes",
	"warden_plugin_instances_reclaimed_total", "warden_plugin_memory_limit_pages", "warden_plugin_timeouts_total",
	"warden_plugin_traps_total", "warden_tenant_plugin_time_refused_total",
}

// fakeModel answers with token usage, then fails as the provider would.
type fakeModel struct{ calls int }

func (m *fakeModel) Complete(context.Context, model.Request) (model.Response, error) {
	m.calls++
	if m.calls > 1 {
		return model.Response{}, &model.ProviderError{Kind: model.ErrRateLimited, Status: 429, Message: "slow down"}
	}
	return model.Response{Usage: model.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 40}}, nil
}

// scrape serves a registry as `warden serve` builds it (runtime
// collectors, a real plugin's counters), drives a little traffic through
// its middleware, loop sink and model wrapper, and returns the scrape.
func scrape(t *testing.T) []byte {
	t.Helper()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	p, err := h.Load(ctx, host.Source{Name: "good", Bytes: testdata.Bytes(t, "good")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{}`, `{"reject":true}`} {
		p.Guard(ctx, "acme", &abi.Request{Phase: abi.PhaseBefore, Tool: "create_site", Args: json.RawMessage(args)})
	}
	m, err := telemetry.NewMetrics(telemetry.MetricsOptions{Runtime: true,
		Plugins:           func() []telemetry.PluginSample { return []telemetry.PluginSample{telemetry.SamplePlugin("Good", p)} },
		PluginTimeRefused: func() map[string]uint64 { return map[string]uint64{"acme": 2} }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/{session}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	api := httptest.NewServer(m.Middleware(mux))
	defer api.Close()
	for _, path := range []string{"/v1/sessions/s_1", "/nowhere"} {
		resp, err := http.Get(api.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	sink := m.Sink("acme")
	for _, e := range []loop.Event{
		{Kind: loop.KindNode, Task: "t1", Node: "t1.n1", Status: "RUNNING"},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.n1", Tool: "create_site", Outcome: "REJECTED", Name: "ARG_SOURCE_UNTRUSTED", Stalls: 1},
		{Kind: loop.KindGuard, Task: "t1", Node: "t1.n1", Tool: "create_site", Guard: "domainguard@0.1.0", Status: "SHADOW", Outcome: "REJECTED", Name: "ARG_REJECTED", Stalls: 1},
		{Kind: loop.KindTool, Task: "t1", Node: "t1.n1", Tool: "create_site", Outcome: "DEFERRED", Name: "APPROVAL_REQUIRED", Stalls: 1},
		{Kind: loop.KindSuspend, Task: "t1", Node: "t1.n1", Status: "APPROVAL", Stalls: 1},
		{Kind: loop.KindNode, Task: "t1", Node: "t1.n1", Status: "DONE"},
		{Kind: loop.KindTask, Task: "t1", Status: "DONE"},
	} {
		sink.Emit(e)
	}
	mod, err := m.Model(&fakeModel{}, "acme", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, _ = mod.Complete(ctx, model.Request{})
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// exported reads the metric names a text exposition holds: each family's,
// with the _bucket, _sum and _count series of histograms and summaries.
func exported(text []byte) map[string]string {
	names := map[string]string{}
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		names[f[2]] = f[3]
		switch f[3] {
		case "histogram":
			names[f[2]+"_bucket"], names[f[2]+"_sum"], names[f[2]+"_count"] = f[3], f[3], f[3]
		case "summary":
			names[f[2]+"_sum"], names[f[2]+"_count"] = f[3], f[3]
		}
	}
	return names
}

// prometheusOwn are the series Prometheus itself records for each target.
var prometheusOwn = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// TestMetricsExported runs promtool check metrics on a real registry's
// scrape, and checks that the dashboard and the alert rules name only the
// metrics in it.
func TestMetricsExported(t *testing.T) {
	t.Parallel()
	text := scrape(t)
	names := exported(text)
	for _, f := range wardenFamilies {
		if names[f] == "" {
			t.Errorf("the scrape has no %s: drive it in scrape, or drop it from wardenFamilies", f)
		}
	}
	for n := range names {
		if strings.HasPrefix(n, "warden_") && !slices.Contains(wardenFamilies, strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")) {
			t.Errorf("the scrape has %s, which wardenFamilies does not list", n)
		}
	}
	for _, n := range prometheusOwn {
		names[n] = "prometheus"
	}
	exprs := append(dashboardExprs(t), ruleExprs(t)...)
	if len(exprs) < 30 {
		t.Fatalf("only %d expressions found", len(exprs))
	}
	for _, u := range unknownMetrics(exprs, names) {
		t.Errorf("%s", u)
	}
	// Last: without promtool, the names are checked all the same.
	runTool(t, ".", text, promtool(t), "check", "metrics")
}

// expr is a PromQL expression and where it was found.
type expr struct{ where, text string }

// labelValues is a Grafana variable query over a metric's label.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// dashboardExprs are the dashboard's panel queries and variable queries.
func dashboardExprs(t *testing.T) []expr {
	t.Helper()
	b, err := os.ReadFile("grafana/warden.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []expr
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, expr{"dashboard panel " + p.Title, tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		q, ok := v.Query.(map[string]any)
		if v.Type != "query" || !ok {
			continue
		}
		s, _ := q["query"].(string)
		if m := labelValues.FindStringSubmatch(s); m != nil {
			out = append(out, expr{"dashboard variable " + v.Name, m[1]})
		} else {
			t.Errorf("dashboard variable %s: query %q is not label_values(metric, label)", v.Name, s)
		}
	}
	return out
}

// ruleExprs are the alert rules' expressions.
func ruleExprs(t *testing.T) []expr {
	t.Helper()
	b, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var out []expr
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, expr{"alert " + r.Alert, r.Expr})
		}
	}
	return out
}

// unknownMetrics reports each metric an expression names that names does
// not hold.
func unknownMetrics(exprs []expr, names map[string]string) []string {
	var out []string
	for _, e := range exprs {
		ms := metricNames(e.text)
		if len(ms) == 0 {
			out = append(out, fmt.Sprintf("%s: %q names no metric", e.where, e.text))
		}
		for _, m := range ms {
			if names[m] == "" {
				out = append(out, fmt.Sprintf("%s: %s is not a metric Warden exports", e.where, m))
			}
		}
	}
	return out
}

var (
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promTokens   = regexp.MustCompile(`\$\{?\w+\}?|[A-Za-z_:][A-Za-z0-9_:]*|[0-9][A-Za-z0-9_.]*|\S`)
	promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan", "Inf", "NaN"}
)

// metricNames are the metric names a PromQL expression selects, sorted:
// what is left once strings, label matchers, ranges and grouping labels
// are cut, less function names, keywords, numbers and Grafana variables.
func metricNames(q string) []string {
	q = promStrings.ReplaceAllString(q, `""`)
	q = promMatchers.ReplaceAllString(q, " ")
	q = promRanges.ReplaceAllString(q, " ")
	q = promGrouping.ReplaceAllString(q, " ")
	toks := promTokens.FindAllString(q, -1)
	seen := map[string]bool{}
	for i, tok := range toks {
		switch {
		case tok[0] == '$' || (tok[0] >= '0' && tok[0] <= '9'):
			continue
		case !regexp.MustCompile(`^[A-Za-z_:]`).MatchString(tok):
			continue
		case slices.Contains(promKeywords, tok):
			continue
		case i+1 < len(toks) && toks[i+1] == "(":
			continue // a function or an aggregation
		}
		seen[tok] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q    string
		want []string
	}{
		{`up{job="warden"} == 0`, []string{"up"}},
		{`absent(up{job="warden"} == 1)`, []string{"up"}},
		{`sum by (instance) (rate(warden_http_requests_total{code=~"5.."}[5m])) / sum by (instance) (rate(warden_http_requests_total[5m])) > 0.05`,
			[]string{"warden_http_requests_total"}},
		{`histogram_quantile(0.95, sum by (le, route) (rate(warden_http_request_duration_seconds_bucket{route!~".*/events"}[$__rate_interval])))`,
			[]string{"warden_http_request_duration_seconds_bucket"}},
		{`sum(rate(x_total[5m])) unless on (plugin, generation) (warden_plugin_info offset 30m)`, []string{"warden_plugin_info", "x_total"}},
		{`topk(20, sum by (tenant, tool, outcome, code) (increase(warden_loop_tool_calls_total{tenant=~"$tenant", outcome!~"SUCCESS|SKIPPED"}[$__range])))`,
			[]string{"warden_loop_tool_calls_total"}},
		{`max by (plugin) (warden_plugin_memory_limit_pages{plugin=~"$plugin"}) * 65536`, []string{"warden_plugin_memory_limit_pages"}},
		{`sum(rate(a[1m])) and sum (rate(b{l="by (x)"}[1m])) > 1e-9`, []string{"a", "b"}},
		{`{__name__="warden_build_info"}`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			t.Parallel()
			if got := metricNames(tt.q); !slices.Equal(got, tt.want) {
				t.Errorf("metricNames = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnknownMetrics: a misspelt metric, or an expression that names none,
// is reported with where it was found.
func TestUnknownMetrics(t *testing.T) {
	t.Parallel()
	names := map[string]string{"warden_http_requests_total": "counter", "up": "prometheus"}
	got := unknownMetrics([]expr{
		{"alert A", `rate(warden_http_requests_total[5m]) > 0`},
		{"alert B", `rate(warden_http_request_total[5m]) > 0`},
		{"panel C", `vector(1)`},
	}, names)
	want := []string{"alert B: warden_http_request_total is not a metric Warden exports", `panel C: "vector(1)" names no metric`}
	if !slices.Equal(got, want) {
		t.Errorf("unknownMetrics = %q, want %q", got, want)
	}
}

// TestDashboard checks what Grafana 10+ needs to import the dashboard: a
// Prometheus data source variable every panel queries through, unique
// panel ids, and panels inside the 24-column grid.
func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("grafana/warden.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name, Type string
				Query      any
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				Type, UID string
			} `json:"datasource"`
			GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			Targets []struct {
				Expr       string `json:"expr"`
				RefID      string `json:"refId"`
				Datasource *struct {
					Type, UID string
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both set and a schema of Grafana 10 or later (36+)", d.UID, d.Title, d.SchemaVersion)
	}
	var ds bool
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			ds = true
		}
	}
	if !ds {
		t.Error("no Prometheus data source variable named datasource")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets: want ${datasource} and a query", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" || tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: target %+v: want the ${datasource} variable, an expression and a refId", p.Title, tg)
			}
		}
	}
}
