package telemetry

import (
	"github.com/agentwarden/warden/host"
	"github.com/prometheus/client_golang/prometheus"
)

// compileCollector reports the host's compile worker, read at each scrape.
type compileCollector struct {
	stats                   func() host.CompileStats
	runs, seconds, fallback *prometheus.Desc
}

func newCompileCollector(stats func() host.CompileStats) *compileCollector {
	return &compileCollector{stats: stats,
		runs: prometheus.NewDesc("warden_plugin_compile_worker_runs_total",
			"Modules the host had never compiled that its compile worker compiled, by result: compiled, refused (the module does not compile), failed (the worker crashed, timed out or answered out of protocol; the module is refused).",
			[]string{"result"}, nil),
		seconds: prometheus.NewDesc("warden_plugin_compile_worker_seconds_total",
			"Time the compile worker's runs took.", nil, nil),
		fallback: prometheus.NewDesc("warden_plugin_compile_worker_fallbacks_total",
			"Modules compiled in the serving process because the compile worker could not be started.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *compileCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.runs
	ch <- c.seconds
	ch <- c.fallback
}

// Collect sends the counters; nothing without a stats function.
func (c *compileCollector) Collect(ch chan<- prometheus.Metric) {
	if c.stats == nil {
		return
	}
	st := c.stats()
	ok := st.Worker - st.WorkerRefused - st.WorkerFailed
	for result, n := range map[string]uint64{"compiled": ok, "refused": st.WorkerRefused, "failed": st.WorkerFailed} {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(n), result)
	}
	ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.CounterValue, st.WorkerTime.Seconds())
	ch <- prometheus.MustNewConstMetric(c.fallback, prometheus.CounterValue, float64(st.Fallback))
}
