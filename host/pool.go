package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// pool is the bounded set of instances of one plugin for one tenant. An
// instance is held by one call at a time; a failed instance is closed.
type pool struct {
	p      *Plugin
	tenant string
	sem    chan struct{}

	mu     sync.Mutex
	idle   []*instance
	closed bool
}

func newPool(p *Plugin, tenant string, size int) *pool {
	return &pool{p: p, tenant: tenant, sem: make(chan struct{}, size)}
}

// acquire waits for a free slot of the pool, for as long as ctx allows (a
// queue, not the plugin's work), then takes an idle instance, the plugin's
// spare, or starts a new one. The call's timeout runs from the moment it has
// its slot, and a start it has to wait for counts against it: a guest whose
// start is slow times out the call as a slow handler would, instead of
// holding it for the load deadline. acquire returns the deadline the call's
// handler must finish by; a start cut short by it wraps ErrTimeout.
func (pl *pool) acquire(ctx context.Context, timeout time.Duration) (*instance, time.Time, error) {
	select {
	case pl.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, time.Time{}, fmt.Errorf("host: %s: waiting for an instance: %w: %w", pl.p.ref, ErrUnavailable, ctx.Err())
	}
	deadline := time.Now().Add(timeout)
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		<-pl.sem
		return nil, deadline, fmt.Errorf("host: %s: %w", pl.p.ref, ErrClosed)
	}
	if n := len(pl.idle); n > 0 {
		inst := pl.idle[n-1]
		pl.idle[n-1] = nil // the instance may close while it is out
		pl.idle = pl.idle[:n-1]
		pl.p.host.instances.busyNow(inst)
		pl.mu.Unlock()
		return inst, deadline, nil
	}
	pl.mu.Unlock()
	inst := pl.p.takeSpare()
	if inst != nil {
		inst.pool = pl
		if pl.tenant != ProbeTenant {
			// The spare now holds this tenant's data: the next cold
			// tenant finds a new one.
			pl.p.refillSpare()
		}
		return inst, deadline, nil
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	inst, err := pl.p.startInstance(sctx, deadline, true)
	late := ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		<-pl.sem
		if isBudget(err) {
			return nil, deadline, err
		}
		if late {
			return nil, deadline, fmt.Errorf("host: %s: new instance: did not start within the call's %v: %w", pl.p.ref, timeout, ErrTimeout)
		}
		return nil, deadline, fmt.Errorf("host: %s: new instance: %w: %w", pl.p.ref, ErrUnavailable, err)
	}
	inst.pool = pl
	return inst, deadline, nil
}

// serves binds inst to the pool's tenant on its first call for one, and
// refuses it (false) for any other: an instance never carries one tenant's
// data into another's call. The probe's tenant binds nothing.
func (pl *pool) serves(inst *instance) bool {
	if pl.tenant == ProbeTenant {
		return inst.tenant == ""
	}
	if inst.tenant == "" {
		inst.tenant = pl.tenant
	}
	return inst.tenant == pl.tenant
}

// release returns inst to the pool if it is healthy and still young, and
// closes it otherwise.
func (pl *pool) release(ctx context.Context, inst *instance, healthy bool) {
	if healthy {
		pl.p.host.instances.resize(inst)
	}
	if pl.tenant == ProbeTenant && healthy && inst.calls < pl.p.policy.MaxCallsPerInstance && pl.p.keepSpare(inst) {
		// A probe's instance saw no tenant's data: it goes back to be the
		// first instance of the next tenant.
		<-pl.sem
		return
	}
	pl.mu.Lock()
	keep := healthy && !pl.closed && inst.calls < pl.p.policy.MaxCallsPerInstance
	if keep {
		pl.idle = append(pl.idle, inst)
		pl.p.host.instances.idleNow(inst)
	}
	pl.mu.Unlock()
	if !keep {
		pl.p.closeInstance(ctx, inst)
	}
	<-pl.sem
}

// close closes the idle instances; busy ones are closed on release.
func (pl *pool) close(ctx context.Context) {
	pl.mu.Lock()
	pl.closed = true
	idle := pl.idle
	pl.idle = nil
	for _, inst := range idle {
		pl.p.host.instances.busyNow(inst)
	}
	pl.mu.Unlock()
	for _, inst := range idle {
		pl.p.closeInstance(ctx, inst)
	}
}

func (pl *pool) idleCount() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.idle)
}

// maxWarm bounds the instances one swap starts ahead of time.
const maxWarm = 32

// warmLike starts, for every tenant whose pool of old holds instances now,
// as many idle instances of p (within p's pool size, and maxWarm in all), so that
// the first calls on a new generation find instances ready instead of
// starting them inside a request.
func (p *Plugin) warmLike(ctx context.Context, old *Plugin) error {
	want := map[string]int{}
	total := 0
	old.mu.Lock()
	for t, pl := range old.pools {
		if t == ProbeTenant {
			continue
		}
		pl.mu.Lock()
		n := min(len(pl.idle)+len(pl.sem), p.policy.PoolSize, maxWarm-total)
		pl.mu.Unlock()
		if n > 0 {
			// A pool that holds no instance now was not serving: its
			// tenant starts one on its next call, as before the swap.
			want[t] = n
			total += n
		}
	}
	old.mu.Unlock()
	for t, n := range want {
		pl, err := p.pool(t)
		if err != nil {
			return err
		}
		for range n {
			inst := p.takeSpare()
			if inst == nil {
				if inst, err = p.startInstance(ctx, time.Now().Add(p.policy.LoadTimeout), false); isBudget(err) {
					// No idle room in the budget: the tenant starts
					// its instance on its next call, as before the swap.
					break
				} else if err != nil {
					return fmt.Errorf("host: %s: warm the pool of %s: %w", p.ref, t, err)
				}
			}
			inst.pool = pl
			pl.mu.Lock()
			pl.idle = append(pl.idle, inst)
			p.host.instances.idleNow(inst)
			pl.mu.Unlock()
		}
	}
	return nil
}

// ProbeTenant is the tenant a self-test calls as: its pool is never warmed
// on a swap, and the instance it used goes back to being the plugin's
// spare, so that checking a candidate costs no instance.
const ProbeTenant = "warden.probe"

// keepSpare makes inst the plugin's spare instance if it has none.
func (p *Plugin) keepSpare(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spare != nil || p.closed {
		return false
	}
	inst.pool = nil
	p.spare = inst
	p.host.instances.idleNow(inst)
	return true
}

// refillSpares is off only in benchmarks that measure a start.
var refillSpares = true

// refillSpare starts a spare for p if it has none and the instance budget
// has free room for one: no other instance is closed, and no call waits,
// for a spare. The first call of the next cold tenant then finds an
// instance ready. One refill runs at a time per plugin.
func (p *Plugin) refillSpare() {
	p.mu.Lock()
	skip := p.spare != nil || p.closed || p.refilling || !refillSpares
	if !skip {
		p.refilling = true
		p.refills.Add(1)
	}
	p.mu.Unlock()
	if skip {
		return
	}
	go func() {
		defer p.refills.Done()
		ctx := context.Background()
		inst, err := p.startInstance(ctx, time.Time{}, false)
		p.mu.Lock()
		p.refilling = false
		p.mu.Unlock()
		if err != nil {
			return
		}
		if !p.keepSpare(inst) {
			p.closeInstance(ctx, inst)
		}
	}()
}
