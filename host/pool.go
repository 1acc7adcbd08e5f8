package host

import (
	"context"
	"fmt"
	"sync"
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

func (pl *pool) acquire(ctx context.Context) (*instance, error) {
	select {
	case pl.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("host: %s: waiting for an instance: %w: %w", pl.p.ref, ErrUnavailable, ctx.Err())
	}
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		<-pl.sem
		return nil, fmt.Errorf("host: %s: %w", pl.p.ref, ErrClosed)
	}
	if n := len(pl.idle); n > 0 {
		inst := pl.idle[n-1]
		pl.idle = pl.idle[:n-1]
		pl.mu.Unlock()
		return inst, nil
	}
	pl.mu.Unlock()
	inst := pl.p.takeSpare()
	if inst != nil {
		return inst, nil
	}
	inst, err := pl.p.newInstance(ctx)
	if err != nil {
		<-pl.sem
		return nil, fmt.Errorf("host: %s: new instance: %w: %w", pl.p.ref, ErrUnavailable, err)
	}
	return inst, nil
}

// release returns inst to the pool if it is healthy and still young, and
// closes it otherwise.
func (pl *pool) release(ctx context.Context, inst *instance, healthy bool) {
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
				if inst, err = p.newInstance(ctx); err != nil {
					return fmt.Errorf("host: %s: warm the pool of %s: %w", p.ref, t, err)
				}
			}
			pl.mu.Lock()
			pl.idle = append(pl.idle, inst)
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
	p.spare = inst
	return true
}
