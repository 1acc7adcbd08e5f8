package telemetry

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxForwardPeers bounds the instances a forwarding metric names: hops to
// further ones (instances renamed at each start, say) count under
// to="_other".
const maxForwardPeers = 32

// forwardMetrics count the requests this instance forwarded to the
// instance serving their session; registered with the first hop.
type forwardMetrics struct {
	once     sync.Once
	err      error
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu    sync.Mutex
	peers map[string]bool
}

func (m *Metrics) forwardCounters() (*forwardMetrics, error) {
	fm := &m.forward
	fm.once.Do(func() {
		fm.peers = map[string]bool{}
		fm.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "warden_forwarded_requests_total",
			Help: "Requests this instance (from) forwarded to the instance serving their session (to), by outcome: relayed, not_owner (the session had moved; looked up again) or unreachable."},
			[]string{"from", "to", "outcome"})
		fm.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "warden_forward_duration_seconds",
			Help: "Latency of forwarded requests by instance pair, until the answer was relayed (an event stream counts until it closes).", Buckets: prometheus.DefBuckets},
			[]string{"from", "to"})
		for _, c := range []prometheus.Collector{fm.requests, fm.duration} {
			if err := m.reg.Register(c); err != nil {
				fm.err = err
				return
			}
		}
	})
	return fm, fm.err
}

// Forwarded counts one forwarded request from instance from to instance
// to, with its outcome and how long it took.
func (m *Metrics) Forwarded(from, to, outcome string, elapsed time.Duration) {
	fm, err := m.forwardCounters()
	if err != nil {
		return
	}
	fm.mu.Lock()
	if !fm.peers[to] {
		if len(fm.peers) >= maxForwardPeers {
			to = "_other"
		} else {
			fm.peers[to] = true
		}
	}
	fm.mu.Unlock()
	fm.requests.WithLabelValues(from, to, outcome).Inc()
	fm.duration.WithLabelValues(from, to).Observe(elapsed.Seconds())
}
