package telemetry_test

import (
	"testing"

	"github.com/agentwarden/warden/internal/telemetry"
)

func TestPluginTimeRefusedMetric(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{PluginTimeRefused: func() map[string]uint64 {
		return map[string]uint64{"acme": 3, "globex": 0}
	}})
	got := series(scrape(t, m), "warden_tenant_plugin_time_refused_total")
	want := sorted(`warden_tenant_plugin_time_refused_total{tenant="acme"} 3
warden_tenant_plugin_time_refused_total{tenant="globex"} 0`)
	if got != want {
		t.Fatalf("series\n got %s\nwant %s", got, want)
	}
	if got := series(scrape(t, newMetrics(t, telemetry.MetricsOptions{})), "warden_tenant_plugin_time"); got != "" {
		t.Fatalf("without a host: %q", got)
	}
}
