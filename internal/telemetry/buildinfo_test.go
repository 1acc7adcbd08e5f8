package telemetry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/telemetry"
)

// TestBuildInfoMetric: every registry NewMetrics makes carries one
// warden_build_info gauge naming the binary ReadBuild describes.
func TestBuildInfoMetric(t *testing.T) {
	t.Parallel()
	b := telemetry.ReadBuild()
	if b.Version == "" || b.GoVersion == "" {
		t.Fatalf("ReadBuild = %+v: no version", b)
	}
	want := fmt.Sprintf("warden_build_info{goversion=%q,revision=%q,version=%q} 1", b.GoVersion, b.Revision, b.Version)
	for _, runtime := range []bool{false, true} {
		t.Run(fmt.Sprintf("runtime=%v", runtime), func(t *testing.T) {
			t.Parallel()
			text := scrape(t, newMetrics(t, telemetry.MetricsOptions{Runtime: runtime}))
			if got := series(text, "warden_build_info"); got != want {
				t.Errorf("build info series\n%s\nwant\n%s", got, want)
			}
			if !strings.Contains(text, "\n# TYPE warden_build_info gauge\n") {
				t.Errorf("warden_build_info is not a gauge:\n%s", text)
			}
		})
	}
}
