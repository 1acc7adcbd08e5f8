package telemetry

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// Sink returns a loop.Sink that counts one session's trace events into m,
// labelled with the session's tenant. Labels are the trace's own words
// (outcome SUCCESS, kind APPROVAL, status DONE), so a series and a log line
// match; no session, task or node id becomes a label.
func (m *Metrics) Sink(tenant string) loop.Sink {
	return &metricsSink{m: m, tenant: tenant,
		stalls:    m.stalls.WithLabelValues(tenant),
		toolCalls: m.toolCalls.MustCurryWith(prometheus.Labels{"tenant": tenant}),
		last:      map[string]int{}}
}

type metricsSink struct {
	m         *Metrics
	tenant    string
	stalls    prometheus.Counter
	toolCalls *prometheus.CounterVec

	mu sync.Mutex
	// last is each live node's no-progress count after its last event.
	last map[string]int
}

// Emit counts one event.
func (s *metricsSink) Emit(e loop.Event) {
	switch e.Kind {
	case loop.KindTool:
		outcome := e.Outcome
		if e.Status == "SKIPPED" {
			outcome = "SKIPPED"
		}
		s.toolCalls.WithLabelValues(s.m.toolLabel(s.tenant, toolName(e.Tool)), outcome, e.Name).Inc()
	case loop.KindGuard:
		policy := "shadow"
		if e.Status == "FAIL_OPEN" {
			policy = "fail_open"
		}
		s.m.guardPolicy.WithLabelValues(s.tenant, toolName(e.Guard), policy, e.Outcome, e.Name).Inc()
	case loop.KindSuspend:
		kind := e.Status
		switch kind {
		case abi.SuspendFollowUp, abi.SuspendApproval, abi.SuspendVerify:
		default:
			kind = "OTHER"
		}
		s.m.suspensions.WithLabelValues(s.tenant, kind).Inc()
	case loop.KindNode:
		if st := state.Status(e.Status); st.Ended() {
			s.m.nodes.WithLabelValues(s.tenant, e.Status).Inc()
		}
	case loop.KindTask:
		switch st := state.Status(e.Status); st {
		case state.Done, state.Failed, state.Cancelled:
			s.m.tasks.WithLabelValues(s.tenant, e.Status).Inc()
		}
	}
	s.countStalls(e)
}

// countStalls counts the rises of a node's no-progress count: every event
// of a node carries the count after it, and the loop only ever raises it by
// one or resets it. A node's first event is its baseline when it starts or
// resumes it (a node resumed after a restart brings its old count along).
func (s *metricsSink) countStalls(e loop.Event) {
	if e.Node == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last, seen := s.last[e.Node]
	if !seen && (e.Kind == loop.KindResume || (e.Kind == loop.KindNode && e.Status == string(state.Running))) {
		last = e.Stalls
	}
	if e.Stalls > last {
		s.stalls.Add(float64(e.Stalls - last))
	}
	s.last[e.Node] = e.Stalls
	if e.Kind == loop.KindNode && state.Status(e.Status).Ended() {
		delete(s.last, e.Node)
	}
}

// toolName makes a model's tool name a short, valid label value.
func toolName(t string) string {
	const maxLen = 64
	if len(t) > maxLen {
		t = t[:maxLen]
	}
	return strings.ToValidUTF8(t, "")
}
