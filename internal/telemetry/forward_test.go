package telemetry_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentwarden/warden/internal/telemetry"
)

// Forwarded requests count per instance pair and outcome; the peers a
// metric names are bounded, further ones count as _other.
func TestForwardMetrics(t *testing.T) {
	t.Parallel()
	m := newMetrics(t, telemetry.MetricsOptions{})
	m.Forwarded("b", "a", "relayed", 30*time.Millisecond)
	m.Forwarded("b", "a", "relayed", 2*time.Second)
	m.Forwarded("b", "a", "not_owner", time.Millisecond)
	m.Forwarded("b", "c", "unreachable", time.Millisecond)
	got := series(scrape(t, m), "warden_forwarded_requests_total")
	want := []string{
		`warden_forwarded_requests_total{from="b",outcome="not_owner",to="a"} 1`,
		`warden_forwarded_requests_total{from="b",outcome="relayed",to="a"} 2`,
		`warden_forwarded_requests_total{from="b",outcome="unreachable",to="c"} 1`,
	}
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("series:\n got %s\nwant %s", got, w)
	}
	if got := series(scrape(t, m), `warden_forward_duration_seconds_count{from="b",to="a"}`); got != `warden_forward_duration_seconds_count{from="b",to="a"} 3` {
		t.Errorf("latency count: %s", got)
	}
	for i := range 40 {
		m.Forwarded("b", fmt.Sprintf("peer-%d", i), "relayed", time.Millisecond)
	}
	if got := series(scrape(t, m), `warden_forwarded_requests_total{from="b",outcome="relayed",to="_other"}`); got != `warden_forwarded_requests_total{from="b",outcome="relayed",to="_other"} 10` {
		t.Errorf("peers beyond the bound: %s", got)
	}
	if problems, err := testutil.GatherAndLint(m.Registry()); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
