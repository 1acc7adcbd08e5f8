package host

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// instanceBudget bounds the instances of every plugin of a host, across
// tenants: their count and their linear memory. Before an instance starts
// it reserves its room; an idle instance (in a tenant's pool, or a plugin's
// spare) is on a list ordered by when it went idle, and the least recently
// used are closed to make room, or once idle for longer than the idle time.
// A start that finds the room taken by busy instances waits for one to be
// released or closed, within the call's deadline.
//
// Locks: a pool's (or its plugin's, for the spare) before the budget's.
type instanceBudget struct {
	maxCount int   // 0: no bound
	maxBytes int64 // 0: no bound
	idleTime time.Duration

	mu      sync.Mutex
	count   int
	peak    int
	bytes   int64
	idle    list.List // of *instance; front: the most recently idle
	changed chan struct{}

	evictions, reclaimed, waits, refused atomic.Uint64
	stop                                 chan struct{}
	done                                 chan struct{}
}

func newInstanceBudget(count int, bytes int64, idle time.Duration) (*instanceBudget, error) {
	switch {
	case count < 0:
		return nil, fmt.Errorf("host: instance budget: count %d is negative", count)
	case bytes < 0:
		return nil, fmt.Errorf("host: instance budget: bytes %d is negative", bytes)
	case idle < 0:
		return nil, fmt.Errorf("host: instance idle time %v is negative", idle)
	}
	b := &instanceBudget{maxCount: count, maxBytes: bytes, idleTime: idle, changed: make(chan struct{})}
	if idle > 0 {
		b.stop, b.done = make(chan struct{}), make(chan struct{})
		go b.reap()
	}
	return b, nil
}

// close stops the reaper.
func (b *instanceBudget) close() {
	if b.stop != nil {
		close(b.stop)
		<-b.done
		b.stop = nil
	}
}

// signal wakes the starts waiting for room; b.mu is held.
func (b *instanceBudget) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *instanceBudget) fits(est int64) bool {
	return (b.maxCount == 0 || b.count+1 <= b.maxCount) && (b.maxBytes == 0 || b.bytes+est <= b.maxBytes)
}

// reserve takes the room of one instance of est bytes: at once if it fits,
// else (evict) after closing the least recently used idle instances, else
// (wait) once busy instances give room back, until deadline or ctx ends.
// It returns whether the start had to wait for busy instances.
func (b *instanceBudget) reserve(ctx context.Context, p *Plugin, est int64, deadline time.Time, wait, evict bool) (bool, error) {
	if b.maxBytes > 0 && est > b.maxBytes {
		return false, fmt.Errorf("host: %s: an instance of %d bytes exceeds the instance budget of %d bytes: %w", p.ref, est, b.maxBytes, ErrUnavailable)
	}
	waited := false
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		if b.fits(est) {
			b.count++
			b.peak = max(b.peak, b.count)
			b.bytes += est
			b.mu.Unlock()
			return waited, nil
		}
		victim := b.idle.Back()
		ch := b.changed
		b.mu.Unlock()
		if victim != nil && evict {
			if b.evict(ctx, victim.Value.(*instance)) {
				b.evictions.Add(1)
				victim.Value.(*instance).p.stats.evicted.Add(1)
			}
			continue
		}
		if !wait {
			return false, fmt.Errorf("host: %s: the instance budget is taken by busy instances: %w", p.ref, ErrUnavailable)
		}
		if !waited {
			waited = true
			b.waits.Add(1)
			p.stats.budgetWaits.Add(1)
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-ch:
		case <-ctx.Done():
			b.refused.Add(1)
			p.stats.budgetRefused.Add(1)
			return true, fmt.Errorf("host: %s: waiting for room in the instance budget: %w: %w", p.ref, ErrUnavailable, ctx.Err())
		case <-timer.C:
			b.refused.Add(1)
			p.stats.budgetRefused.Add(1)
			return true, fmt.Errorf("host: %s: no room in the instance budget (%s) within the call's deadline: %w", p.ref, b.limitText(), ErrUnavailable)
		}
	}
}

func (b *instanceBudget) limitText() string {
	switch {
	case b.maxCount > 0 && b.maxBytes > 0:
		return fmt.Sprintf("%d instances, %d bytes", b.maxCount, b.maxBytes)
	case b.maxCount > 0:
		return fmt.Sprintf("%d instances", b.maxCount)
	}
	return fmt.Sprintf("%d bytes", b.maxBytes)
}

// unreserve gives back the room of a start that failed.
func (b *instanceBudget) unreserve(est int64) {
	b.mu.Lock()
	b.count--
	b.bytes -= est
	b.signal()
	b.mu.Unlock()
}

// admit accounts an instance started outside reserve (a plugin's first,
// at load): idle instances make room for it, but it is never refused.
func (b *instanceBudget) admit(ctx context.Context, inst *instance) {
	est := inst.memoryBytes()
	for {
		b.mu.Lock()
		victim := b.idle.Back()
		if b.fits(est) || victim == nil {
			b.count++
			b.peak = max(b.peak, b.count)
			b.bytes += est
			inst.bytes = est
			b.mu.Unlock()
			inst.p.memLive.Add(est)
			return
		}
		b.mu.Unlock()
		if b.evict(ctx, victim.Value.(*instance)) {
			b.evictions.Add(1)
			victim.Value.(*instance).p.stats.evicted.Add(1)
		}
	}
}

// started sets the bytes of an instance that reserved est to its size.
func (b *instanceBudget) started(inst *instance, est int64) {
	inst.bytes = est
	inst.p.memLive.Add(est)
	b.resize(inst)
}

// resize accounts inst's linear memory as it is now.
func (b *instanceBudget) resize(inst *instance) {
	n := inst.memoryBytes()
	b.mu.Lock()
	d := n - inst.bytes
	b.bytes += d
	inst.bytes = n
	if d < 0 {
		b.signal()
	}
	b.mu.Unlock()
	inst.p.memLive.Add(d)
}

// gone gives back the room of a closed instance.
func (b *instanceBudget) gone(inst *instance) {
	b.mu.Lock()
	b.count--
	b.bytes -= inst.bytes
	if inst.elem != nil {
		b.idle.Remove(inst.elem)
		inst.elem = nil
	}
	b.signal()
	b.mu.Unlock()
	inst.p.memLive.Add(-inst.bytes)
	inst.bytes = 0
}

// idleNow puts inst on the idle list; its holder's lock is held.
func (b *instanceBudget) idleNow(inst *instance) {
	b.mu.Lock()
	inst.idleSince = time.Now()
	inst.elem = b.idle.PushFront(inst)
	b.signal()
	b.mu.Unlock()
}

// busyNow takes inst off the idle list; its holder's lock is held.
func (b *instanceBudget) busyNow(inst *instance) {
	b.mu.Lock()
	if inst.elem != nil {
		b.idle.Remove(inst.elem)
		inst.elem = nil
	}
	b.mu.Unlock()
}

// evict closes inst if it is still idle where it was: in its pool, or its
// plugin's spare. It reports whether it closed it.
func (b *instanceBudget) evict(ctx context.Context, inst *instance) bool {
	p := inst.p
	var took bool
	if pl := inst.pool; pl != nil {
		pl.mu.Lock()
		b.mu.Lock()
		if inst.elem != nil {
			for i, x := range pl.idle {
				if x == inst {
					// Delete clears the vacated slot: a pointer left
					// past the end would keep the closed instance, and
					// the module behind it, alive.
					pl.idle = slices.Delete(pl.idle, i, i+1)
					b.idle.Remove(inst.elem)
					inst.elem = nil
					took = true
					break
				}
			}
		}
		b.mu.Unlock()
		pl.mu.Unlock()
	} else {
		p.mu.Lock()
		b.mu.Lock()
		if inst.elem != nil && p.spare == inst {
			b.idle.Remove(inst.elem)
			inst.elem = nil
			p.spare = nil
			took = true
		}
		b.mu.Unlock()
		p.mu.Unlock()
	}
	if took {
		p.closeInstance(ctx, inst)
	}
	return took
}

// reap closes, every quarter of the idle time, the instances of tenants'
// pools idle for longer than the idle time. A plugin's spare, which holds
// no tenant's data and serves the next cold tenant, is kept.
func (b *instanceBudget) reap() {
	defer close(b.done)
	tick := time.NewTicker(max(b.idleTime/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		if b.reclaim(context.Background(), time.Now().Add(-b.idleTime)) > 0 {
			mappings.trim()
		}
	}
}

// reclaim closes the pooled instances idle since before cutoff and returns
// how many it closed.
func (b *instanceBudget) reclaim(ctx context.Context, cutoff time.Time) int {
	n := 0
	for {
		var victim *instance
		b.mu.Lock()
		for e := b.idle.Back(); e != nil; e = e.Prev() {
			inst := e.Value.(*instance)
			if !inst.idleSince.Before(cutoff) {
				break
			}
			if inst.pool != nil {
				victim = inst
				break
			}
		}
		b.mu.Unlock()
		if victim == nil {
			return n
		}
		if b.evict(ctx, victim) {
			n++
			b.reclaimed.Add(1)
			victim.p.stats.reclaimed.Add(1)
		}
	}
}

// InstanceUsage is the instances of every plugin of a host against the
// host's instance budget.
type InstanceUsage struct {
	// Live instances (idle and busy), Idle those idle, Peak the most
	// alive at once, MemoryBytes the linear memory they hold.
	Live, Idle, Peak int
	MemoryBytes      int64
	// MaxInstances and MaxBytes are the budget (0: none); IdleTime the idle
	// time after which a pooled instance is closed (0: never).
	MaxInstances int
	MaxBytes     int64
	IdleTime     time.Duration
	// Evictions are idle instances closed to make room for a start,
	// Reclaimed those closed after the idle time; Waits the starts that
	// waited for busy instances to give room, Refused those of them that
	// found none within their call's deadline.
	Evictions, Reclaimed, Waits, Refused uint64
}

// InstanceUsage returns the instances of every plugin of h against the
// instance budget.
func (h *Host) InstanceUsage() InstanceUsage {
	b := h.instances
	b.mu.Lock()
	u := InstanceUsage{Live: b.count, Idle: b.idle.Len(), Peak: b.peak, MemoryBytes: b.bytes,
		MaxInstances: b.maxCount, MaxBytes: b.maxBytes, IdleTime: b.idleTime}
	b.mu.Unlock()
	u.Evictions, u.Reclaimed, u.Waits, u.Refused = b.evictions.Load(), b.reclaimed.Load(), b.waits.Load(), b.refused.Load()
	return u
}

// ReclaimIdle closes now every pooled instance idle for longer than
// olderThan, as the idle time does, and returns how many it closed.
func (h *Host) ReclaimIdle(ctx context.Context, olderThan time.Duration) int {
	n := h.instances.reclaim(ctx, time.Now().Add(-olderThan))
	if n > 0 {
		mappings.trim()
	}
	return n
}
