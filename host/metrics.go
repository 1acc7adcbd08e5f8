package host

import (
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
)

// counters are a plugin's own metrics, updated without locks.
type counters struct {
	success, failed, rejected, deferred, pass           atomic.Uint64
	traps, timeouts, memory, violations, outputTooLarge atomic.Uint64
	inputTooLarge, unavailable, failOpen, shadowDiffers atomic.Uint64
	created, closed                                     atomic.Uint64
	evicted, reclaimed, budgetWaits, budgetRefused      atomic.Uint64
	crossTenant                                         atomic.Uint64
	calls, nanos                                        atomic.Uint64
	buckets                                             [numBuckets + 1]atomic.Uint64
}

const numBuckets = 11

// LatencyBuckets are the upper bounds of the call latency histogram.
var LatencyBuckets = [numBuckets]time.Duration{
	10 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

func (c *counters) observe(d time.Duration) {
	c.calls.Add(1)
	c.nanos.Add(uint64(d))
	i := 0
	for i < len(LatencyBuckets) && d > LatencyBuckets[i] {
		i++
	}
	c.buckets[i].Add(1)
}

func (c *counters) count(v abi.Verdict) {
	switch {
	case v.Pass:
		c.pass.Add(1)
	case v.Observation == nil:
	case v.Observation.Outcome == abi.OutcomeSuccess:
		c.success.Add(1)
	case v.Observation.Outcome == abi.OutcomeFailed:
		c.failed.Add(1)
	case v.Observation.Outcome == abi.OutcomeRejected:
		c.rejected.Add(1)
	case v.Observation.Outcome == abi.OutcomeDeferred:
		c.deferred.Add(1)
	}
}

// Stats is a snapshot of one plugin's metrics.
type Stats struct {
	Plugin string
	Digest string
	// Results the plugin reported, by kind.
	Pass, Success, Failed, Rejected, Deferred uint64
	// Failures of the plugin itself.
	Traps, Timeouts, MemoryLimits, Violations, OutputTooLarge, InputTooLarge, Unavailable uint64
	// Failure-policy outcomes for guards.
	FailOpen, ShadowDiffers uint64
	// Instances: alive now (idle + busy), idle in pools, created and closed
	// since load.
	InstancesLive    int64
	InstancesIdle    int
	InstancesCreated uint64
	InstancesClosed  uint64
	// Of the instances closed: those evicted (idle, closed to make room
	// in the host's instance budget) and reclaimed (idle for longer than
	// the idle time).
	InstancesEvicted, InstancesReclaimed uint64
	// InstancesMemoryBytes is the linear memory the live instances hold.
	InstancesMemoryBytes int64
	// BudgetWaits are the calls that waited for busy instances to give
	// room in the instance budget; BudgetRefused those of them that found
	// none within their deadline.
	BudgetWaits, BudgetRefused uint64
	// InFlight is the number of calls running now.
	InFlight int64
	// Calls and TotalLatency cover every Invoke; Latency counts calls per
	// LatencyBuckets bound (the last entry counts calls above the last bound).
	Calls        uint64
	TotalLatency time.Duration
	Latency      []uint64
	// Probes are the calls of the load check and self-tests (ProbeTenant);
	// Calls, TotalLatency, Latency and the results leave them out.
	Probes uint64
	// MemoryPages is the per-instance memory limit.
	MemoryPages int
	// InstanceMemoryBytes is the largest linear memory an instance of this
	// plugin has reached so far.
	InstanceMemoryBytes int64
}

// Stats returns a snapshot of p's metrics.
func (p *Plugin) Stats() Stats {
	c := &p.stats
	s := Stats{
		Plugin: p.ref, Digest: p.digest,
		Pass: c.pass.Load(), Success: c.success.Load(), Failed: c.failed.Load(), Rejected: c.rejected.Load(), Deferred: c.deferred.Load(),
		Traps: c.traps.Load(), Timeouts: c.timeouts.Load(), MemoryLimits: c.memory.Load(), Violations: c.violations.Load(),
		OutputTooLarge: c.outputTooLarge.Load(), InputTooLarge: c.inputTooLarge.Load(), Unavailable: c.unavailable.Load(),
		FailOpen: c.failOpen.Load(), ShadowDiffers: c.shadowDiffers.Load(),
		InstancesLive: p.live.Load(), InstancesCreated: c.created.Load(), InstancesClosed: c.closed.Load(),
		InstancesEvicted: c.evicted.Load(), InstancesReclaimed: c.reclaimed.Load(), InstancesMemoryBytes: p.memLive.Load(),
		BudgetWaits: c.budgetWaits.Load(), BudgetRefused: c.budgetRefused.Load(),
		InFlight: p.inflight.Load(), Calls: c.calls.Load(), TotalLatency: time.Duration(c.nanos.Load()),
		MemoryPages: p.limits.MemoryPages, InstanceMemoryBytes: p.memHigh.Load(), Probes: p.probes.calls.Load(),
	}
	s.Latency = make([]uint64, len(c.buckets))
	for i := range c.buckets {
		s.Latency[i] = c.buckets[i].Load()
	}
	p.mu.Lock()
	for _, pl := range p.pools {
		s.InstancesIdle += pl.idleCount()
	}
	if p.spare != nil {
		s.InstancesIdle++
	}
	p.mu.Unlock()
	return s
}
