package telemetry

import "github.com/prometheus/client_golang/prometheus"

// pluginTimeCollector reports the host's per-tenant count of plugin calls
// refused for want of plugin time, read at each scrape.
type pluginTimeCollector struct {
	refused func() map[string]uint64
	desc    *prometheus.Desc
}

func newPluginTimeCollector(refused func() map[string]uint64) *pluginTimeCollector {
	return &pluginTimeCollector{refused: refused, desc: prometheus.NewDesc("warden_tenant_plugin_time_refused_total",
		"Plugin calls not started because the tenant had spent its plugin time.", []string{"tenant"}, nil)}
}

// Describe sends the descriptor.
func (c *pluginTimeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends one counter per tenant the host has budgeted.
func (c *pluginTimeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.refused == nil {
		return
	}
	for tenant, n := range c.refused() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), tenant)
	}
}
