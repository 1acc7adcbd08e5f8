package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentwarden/warden/host"
)

// PluginSample is one plugin's metrics at a scrape: the plugin a chain
// position or builtin name serves, the slot generation serving it (0
// outside a slot) and a snapshot of its counters.
type PluginSample struct {
	// Plugin labels the series; empty means Stats.Plugin (name@version).
	Plugin     string
	Generation uint64
	Stats      host.Stats
}

// SampleSlot samples the generation a slot serves now, labelled with the
// slot's name.
func SampleSlot(s *host.Slot) PluginSample {
	p := s.Plugin()
	return PluginSample{Plugin: s.Name(), Generation: p.Generation(), Stats: p.Stats()}
}

// SamplePlugin samples a plugin loaded outside a slot, labelled name (empty
// means its name@version).
func SamplePlugin(name string, p *host.Plugin) PluginSample {
	return PluginSample{Plugin: name, Generation: p.Generation(), Stats: p.Stats()}
}

// Plugin call outcomes, the values of the outcome label of
// warden_plugin_calls_total: what the plugin reported, or how it failed.
var pluginOutcomes = []struct {
	name  string
	count func(*host.Stats) uint64
}{
	{"pass", func(s *host.Stats) uint64 { return s.Pass }},
	{"success", func(s *host.Stats) uint64 { return s.Success }},
	{"failed", func(s *host.Stats) uint64 { return s.Failed }},
	{"rejected", func(s *host.Stats) uint64 { return s.Rejected }},
	{"deferred", func(s *host.Stats) uint64 { return s.Deferred }},
	{"trap", func(s *host.Stats) uint64 { return s.Traps }},
	{"timeout", func(s *host.Stats) uint64 { return s.Timeouts }},
	{"memory_limit", func(s *host.Stats) uint64 { return s.MemoryLimits }},
	{"contract_violation", func(s *host.Stats) uint64 { return s.Violations }},
	{"output_too_large", func(s *host.Stats) uint64 { return s.OutputTooLarge }},
	{"input_too_large", func(s *host.Stats) uint64 { return s.InputTooLarge }},
	{"unavailable", func(s *host.Stats) uint64 { return s.Unavailable }},
}

// pluginCollector turns PluginSamples into const metrics at each scrape, so
// the series of a retired generation disappear with it.
type pluginCollector struct {
	samples func() []PluginSample

	info, calls, latency, traps, timeouts, policy        *prometheus.Desc
	live, idle, created, closed, inFlight, pages, memory *prometheus.Desc
	evicted, reclaimed, memLive, waits, refused          *prometheus.Desc
}

func newPluginCollector(samples func() []PluginSample) *pluginCollector {
	l := []string{"plugin", "generation"}
	d := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc("warden_plugin_"+name, help, append(append([]string(nil), l...), extra...), nil)
	}
	return &pluginCollector{
		samples:   samples,
		info:      d("info", "The module serving a plugin generation (always 1).", "ref", "digest"),
		calls:     d("calls_total", "Plugin calls by outcome: the plugin's result, or how the plugin failed.", "outcome"),
		latency:   d("call_duration_seconds", "Latency of plugin calls."),
		traps:     d("traps_total", "Plugin calls that trapped (panic, unreachable, exit)."),
		timeouts:  d("timeouts_total", "Plugin calls that passed their deadline."),
		policy:    d("failure_policy_total", "Guard failures let through by a fail-open policy (fail_open), and shadow verdicts that differed from pass (shadow_differs).", "action"),
		live:      d("instances_live", "Instances alive (idle and busy)."),
		idle:      d("instances_idle", "Instances idle in the pools."),
		created:   d("instances_created_total", "Instances created since load."),
		closed:    d("instances_closed_total", "Instances closed since load."),
		inFlight:  d("in_flight", "Plugin calls running now."),
		pages:     d("memory_limit_pages", "Memory limit of one instance, in 64 KiB pages."),
		memory:    d("instance_memory_bytes", "Largest linear memory an instance has reached."),
		evicted:   d("instances_evicted_total", "Idle instances closed to make room in the process's instance budget."),
		reclaimed: d("instances_reclaimed_total", "Idle instances closed after the idle time."),
		memLive:   d("instances_memory_bytes", "Linear memory the live instances hold."),
		waits:     d("budget_waits_total", "Calls that waited for busy instances to give room in the instance budget."),
		refused:   d("budget_refused_total", "Calls that found no room in the instance budget within their deadline."),
	}
}

// Describe sends every descriptor.
func (c *pluginCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.calls, c.latency, c.traps, c.timeouts, c.policy,
		c.live, c.idle, c.created, c.closed, c.inFlight, c.pages, c.memory,
		c.evicted, c.reclaimed, c.memLive, c.waits, c.refused} {
		ch <- d
	}
}

// Collect sends the metrics of every sample; a second sample of the same
// plugin and generation is dropped, as it would make the scrape invalid.
func (c *pluginCollector) Collect(ch chan<- prometheus.Metric) {
	if c.samples == nil {
		return
	}
	seen := map[[2]string]bool{}
	for _, s := range c.samples() {
		name := s.Plugin
		if name == "" {
			name = s.Stats.Plugin
		}
		gen := strconv.FormatUint(s.Generation, 10)
		if seen[[2]string{name, gen}] {
			continue
		}
		seen[[2]string{name, gen}] = true
		c.collect(ch, name, gen, &s.Stats)
	}
}

func (c *pluginCollector) collect(ch chan<- prometheus.Metric, name, gen string, st *host.Stats) {
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, extra ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, append([]string{name, gen}, extra...)...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	send(c.info, prometheus.GaugeValue, 1, st.Plugin, st.Digest)
	for _, o := range pluginOutcomes {
		send(c.calls, prometheus.CounterValue, float64(o.count(st)), o.name)
	}
	// The buckets are cumulative; the count is their total, so that the
	// +Inf bucket equals the count even when a call ended between the
	// snapshot's loads.
	buckets := make(map[float64]uint64, len(host.LatencyBuckets))
	var count uint64
	for i, n := range st.Latency {
		count += n
		if i < len(host.LatencyBuckets) {
			buckets[host.LatencyBuckets[i].Seconds()] = count
		}
	}
	h, err := prometheus.NewConstHistogram(c.latency, count, st.TotalLatency.Seconds(), buckets, name, gen)
	if err != nil {
		h = prometheus.NewInvalidMetric(c.latency, err)
	}
	ch <- h
	send(c.traps, prometheus.CounterValue, float64(st.Traps))
	send(c.timeouts, prometheus.CounterValue, float64(st.Timeouts))
	send(c.policy, prometheus.CounterValue, float64(st.FailOpen), "fail_open")
	send(c.policy, prometheus.CounterValue, float64(st.ShadowDiffers), "shadow_differs")
	send(c.live, prometheus.GaugeValue, float64(st.InstancesLive))
	send(c.idle, prometheus.GaugeValue, float64(st.InstancesIdle))
	send(c.created, prometheus.CounterValue, float64(st.InstancesCreated))
	send(c.closed, prometheus.CounterValue, float64(st.InstancesClosed))
	send(c.inFlight, prometheus.GaugeValue, float64(st.InFlight))
	send(c.pages, prometheus.GaugeValue, float64(st.MemoryPages))
	send(c.memory, prometheus.GaugeValue, float64(st.InstanceMemoryBytes))
	send(c.evicted, prometheus.CounterValue, float64(st.InstancesEvicted))
	send(c.reclaimed, prometheus.CounterValue, float64(st.InstancesReclaimed))
	send(c.memLive, prometheus.GaugeValue, float64(st.InstancesMemoryBytes))
	send(c.waits, prometheus.CounterValue, float64(st.BudgetWaits))
	send(c.refused, prometheus.CounterValue, float64(st.BudgetRefused))
}

// SampleSlotGenerations samples every generation a slot keeps counters
// of: the serving one, and the retired ones as their calls left them, so
// a generation that served between two scrapes is still scraped after its
// swap (the slot keeps the newest 16).
func SampleSlotGenerations(s *host.Slot) []PluginSample {
	var out []PluginSample
	for _, g := range s.History() {
		if st, ok := s.GenerationStats(g.Number); ok {
			out = append(out, PluginSample{Plugin: s.Name(), Generation: g.Number, Stats: st})
		}
	}
	return out
}
