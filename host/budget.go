package host

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// timeBudget is one tenant's plugin time (Options.PluginTime): a token
// bucket of nanoseconds of plugin work. A call starts only while the
// bucket holds some; it is charged the time it held its instance once it
// ends, so one call may overdraw the bucket, and the tenant's next calls
// are refused until it has refilled.
type timeBudget struct {
	mu     sync.Mutex
	tokens float64 // nanoseconds; negative after an overdraw
	last   time.Time
	// refused counts the calls refused for want of time.
	refused atomic.Uint64
}

// budgets is the per-tenant plugin time of a Host.
type budgets struct {
	rate  float64 // nanoseconds of plugin time per nanosecond
	burst float64 // nanoseconds
	// perSecond and burstTime are the options, for messages.
	perSecond, burstTime time.Duration
	now                  func() time.Time

	mu      sync.Mutex
	tenants map[string]*timeBudget
}

func newBudgets(perSecond, burst time.Duration) (*budgets, error) {
	switch {
	case perSecond < 0:
		return nil, fmt.Errorf("host: plugin time %v is negative", perSecond)
	case burst < 0:
		return nil, fmt.Errorf("host: plugin burst %v is negative", burst)
	case perSecond == 0:
		return nil, nil
	}
	if burst == 0 {
		burst = perSecond
	}
	return &budgets{rate: float64(perSecond) / float64(time.Second), burst: float64(burst), now: time.Now,
		perSecond: perSecond, burstTime: burst, tenants: map[string]*timeBudget{}}, nil
}

// of returns the tenant's budget, nil when its calls are not budgeted:
// no budget is set, or the tenant is the self-test's.
func (bs *budgets) of(tenant string) *timeBudget {
	if bs == nil || tenant == ProbeTenant {
		return nil
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.tenants[tenant]
	if b == nil {
		b = &timeBudget{tokens: bs.burst, last: bs.now()}
		bs.tenants[tenant] = b
	}
	return b
}

// refill adds the time since the last look; b.mu is held.
func (bs *budgets) refill(b *timeBudget, now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(bs.burst, b.tokens+float64(d)*bs.rate)
		b.last = now
	}
}

// start says whether a call of the tenant may start now and, when not,
// how long until one may.
func (bs *budgets) start(b *timeBudget) (wait time.Duration, ok bool) {
	now := bs.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	bs.refill(b, now)
	if b.tokens > 0 {
		return 0, true
	}
	b.refused.Add(1)
	return time.Duration(math.Ceil((1 - b.tokens) / bs.rate)), false
}

// charge takes from b the time a call ran since from.
func (bs *budgets) charge(b *timeBudget, from time.Time) {
	now := bs.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	bs.refill(b, now)
	if d := now.Sub(from); d > 0 {
		b.tokens -= float64(d)
	}
}

// refusedCalls returns, per tenant, the calls refused so far.
func (bs *budgets) refusedCalls() map[string]uint64 {
	out := map[string]uint64{}
	if bs == nil {
		return out
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for t, b := range bs.tenants {
		out[t] = b.refused.Load()
	}
	return out
}

// PluginTimeRefused returns, per tenant, how many plugin calls were not
// started because the tenant had spent its plugin time
// (Options.PluginTime). A tenant whose calls were never budgeted is absent.
func (h *Host) PluginTimeRefused() map[string]uint64 { return h.budgets.refusedCalls() }

// budgetDetail is the detail of a call refused for want of plugin time.
func (bs *budgets) detail(wait time.Duration) string {
	wait = max((wait + time.Millisecond - 1).Truncate(time.Millisecond), time.Millisecond)
	return fmt.Sprintf("the tenant has used its plugin time (%v a second, burst %v); more is there in %v",
		bs.perSecond, bs.burstTime, wait)
}
