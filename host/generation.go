package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
)

// ErrIncompatible is returned when a candidate generation does not fit the
// slot it would replace (another name, role or phases).
var ErrIncompatible = errors.New("candidate generation is incompatible")

// ErrNoPrevious is returned by Rollback when there is nothing to roll back to.
var ErrNoPrevious = errors.New("no previous generation")

// Slot serves one plugin through successive generations, so the platform
// can roll a new version of a guard out, or back, under load. A call takes
// the current generation and finishes on it; Swap installs a new generation
// atomically; a replaced generation is closed when its last call returns. A
// candidate that fails to load, to start, or its self-test never replaces
// the serving one.
type Slot struct {
	name string
	h    *Host

	cur atomic.Pointer[generation]

	mu      sync.Mutex // serialises Swap and Rollback
	prev    *candidate
	number  uint64
	history []GenerationInfo
	// kept are the newest generations (keptGenerations at most, the
	// serving one last), whose counters GenerationStats reads; a retired
	// one's stop where it left them.
	kept []*generation
}

// keptGenerations bounds how many generations' counters a slot keeps.
const keptGenerations = 16

// generation is one loaded plugin of a slot with its in-flight calls.
type generation struct {
	p       *Plugin
	info    GenerationInfo
	src     candidate
	refs    atomic.Int64
	retired atomic.Bool
	closed  sync.Once
}

type candidate struct {
	src Source
	pol Policy
}

// GenerationInfo describes one generation of a slot.
type GenerationInfo struct {
	Number    uint64
	Ref       string // name@version
	Digest    string
	Installed time.Time
	Retired   time.Time
}

// SelfTest checks a candidate generation before it serves; return an error to
// keep the old one. It runs on the loaded candidate, before the swap.
type SelfTest func(ctx context.Context, p *Plugin) error

// NewSlot loads the first generation of a slot.
func (h *Host) NewSlot(ctx context.Context, name string, src Source, pol Policy, test SelfTest) (*Slot, error) {
	return h.NewSlotAs(ctx, name, src, pol, test, 0)
}

// NewSlotAs is NewSlot whose first generation is numbered number (1 when
// 0).
func (h *Host) NewSlotAs(ctx context.Context, name string, src Source, pol Policy, test SelfTest, number uint64) (*Slot, error) {
	s := &Slot{name: name, h: h}
	if _, err := s.SwapAs(ctx, src, pol, test, number); err != nil {
		return nil, err
	}
	return s, nil
}

// Name is the slot's chain position name.
func (s *Slot) Name() string { return s.name }

// Current describes the serving generation.
func (s *Slot) Current() GenerationInfo { return s.cur.Load().info }

// History lists every generation installed, oldest first.
func (s *Slot) History() []GenerationInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]GenerationInfo(nil), s.history...)
}

// GenerationStats returns the counters of generation n: the serving
// generation's as they are now, a retired one's as its calls left them.
// Only the newest keptGenerations are kept; false for an older or unknown
// one.
func (s *Slot) GenerationStats(n uint64) (Stats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.kept {
		if g.info.Number == n {
			return g.p.Stats(), true
		}
	}
	return Stats{}, false
}

// Plugin returns the serving generation's plugin (for stats and inspection;
// calls should go through the slot so a swap cannot close it under them).
func (s *Slot) Plugin() *Plugin { return s.cur.Load().p }

func (s *Slot) acquire() *generation {
	for {
		g := s.cur.Load()
		g.refs.Add(1)
		if s.cur.Load() == g {
			return g
		}
		s.release(g) // swapped meanwhile: take the new one
	}
}

func (s *Slot) release(g *generation) {
	if g.refs.Add(-1) == 0 && g.retired.Load() {
		g.close()
	}
}

func (g *generation) close() {
	g.closed.Do(func() { _ = g.p.Close(context.Background()) })
}

// Guard runs the serving generation as a guard.
func (s *Slot) Guard(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	g := s.acquire()
	defer s.release(g)
	return g.p.Guard(ctx, tenant, req)
}

// GuardEnvelope runs the serving generation as a guard on a shared envelope.
func (s *Slot) GuardEnvelope(ctx context.Context, tenant string, env *Envelope) abi.Verdict {
	g := s.acquire()
	defer s.release(g)
	return g.p.GuardEnvelope(ctx, tenant, env)
}

// Builtin runs the serving generation as a builtin.
func (s *Slot) Builtin(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	g := s.acquire()
	defer s.release(g)
	return g.p.Builtin(ctx, tenant, req)
}

// Swap loads a candidate (digest pin, compile, config, pre-warm), runs the
// self-test, and only then makes it the serving generation. Calls in flight
// finish on the generation they started on; it is closed after the last.
func (s *Slot) Swap(ctx context.Context, src Source, pol Policy, test SelfTest) (GenerationInfo, error) {
	return s.SwapAs(ctx, src, pol, test, 0)
}

// SwapAs is Swap numbering the new generation number when that is above
// every number the slot gave (the number a fleet's store gives it), else
// one above the last.
func (s *Slot) SwapAs(ctx context.Context, src Source, pol Policy, test SelfTest, number uint64) (GenerationInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.swapLocked(ctx, candidate{src, pol}, test, number)
}

func (s *Slot) swapLocked(ctx context.Context, c candidate, test SelfTest, number uint64) (GenerationInfo, error) {
	p, err := s.h.Load(ctx, c.src, c.pol)
	if err != nil {
		return GenerationInfo{}, fmt.Errorf("host: slot %s: candidate: %w", s.name, err)
	}
	old := s.cur.Load()
	if old != nil {
		om, nm := old.p.Manifest(), p.Manifest()
		if om.Name != nm.Name || om.Role != nm.Role || !samePhases(om.Phases, nm.Phases) {
			_ = p.Close(ctx)
			return GenerationInfo{}, fmt.Errorf("host: slot %s: %s %s %v replacing %s %s %v: %w",
				s.name, nm.Name, nm.Role, nm.Phases, om.Name, om.Role, om.Phases, ErrIncompatible)
		}
	}
	// What a tenant would run, before anyone's self-test: a candidate that
	// traps, hangs or breaks the contract on a request at the edges never
	// serves.
	if err := p.LoadCheck(ctx); err != nil {
		_ = p.Close(ctx)
		return GenerationInfo{}, fmt.Errorf("host: slot %s: candidate: %w", s.name, err)
	}
	if test != nil {
		if err := test(ctx, p); err != nil {
			_ = p.Close(ctx)
			return GenerationInfo{}, fmt.Errorf("host: slot %s: self-test of %s: %w", s.name, p.Ref(), err)
		}
	}
	if old != nil {
		// The tenants the serving generation has instances for get theirs
		// before the swap, not inside their next calls.
		if err := p.warmLike(ctx, old.p); err != nil {
			_ = p.Close(ctx)
			return GenerationInfo{}, fmt.Errorf("host: slot %s: candidate %s: %w", s.name, p.Ref(), err)
		}
	}
	s.number = max(s.number+1, number)
	p.generation.Store(s.number)
	g := &generation{p: p, src: c, info: GenerationInfo{Number: s.number, Ref: p.Ref(), Digest: p.Digest(), Installed: time.Now()}}
	s.cur.Store(g)
	s.history = append(s.history, g.info)
	s.kept = append(s.kept, g)
	if len(s.kept) > keptGenerations {
		s.kept = slices.Delete(s.kept, 0, len(s.kept)-keptGenerations)
	}
	if old != nil {
		s.prev = &old.src
		for i := range s.history {
			if s.history[i].Number == old.info.Number {
				s.history[i].Retired = time.Now()
			}
		}
		old.retired.Store(true)
		if old.refs.Load() == 0 {
			old.close()
		}
	}
	return g.info, nil
}

// Rollback makes the previous generation's module serve again, as a new
// generation (its compiled code comes from the cache).
func (s *Slot) Rollback(ctx context.Context, test SelfTest) (GenerationInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prev == nil {
		return GenerationInfo{}, fmt.Errorf("host: slot %s: %w", s.name, ErrNoPrevious)
	}
	return s.swapLocked(ctx, *s.prev, test, 0)
}

// Close retires the serving generation; it closes after its last call.
func (s *Slot) Close() {
	if g := s.cur.Load(); g != nil {
		g.retired.Store(true)
		if g.refs.Load() == 0 {
			g.close()
		}
	}
}

func samePhases(a, b []abi.Phase) bool {
	if len(a) != len(b) {
		return false
	}
	for _, p := range a {
		found := false
		for _, q := range b {
			found = found || p == q
		}
		if !found {
			return false
		}
	}
	return true
}
