package telemetry_test

import (
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/telemetry"
)

func TestCompileWorkerMetrics(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{Compiles: func() host.CompileStats {
		return host.CompileStats{Worker: 5, WorkerFailed: 1, WorkerRefused: 2, WorkerTime: 1500 * time.Millisecond, Fallback: 4}
	}})
	got := series(scrape(t, m), "warden_plugin_compile_worker_")
	want := sorted(`warden_plugin_compile_worker_fallbacks_total 4
warden_plugin_compile_worker_runs_total{result="compiled"} 2
warden_plugin_compile_worker_runs_total{result="failed"} 1
warden_plugin_compile_worker_runs_total{result="refused"} 2
warden_plugin_compile_worker_seconds_total 1.5`)
	if got != want {
		t.Fatalf("series\n got %s\nwant %s", got, want)
	}
	if got := series(scrape(t, newMetrics(t, telemetry.MetricsOptions{})), "warden_plugin_compile_worker_"); got != "" {
		t.Fatalf("without a host: %q", got)
	}
}
