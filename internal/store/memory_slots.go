package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemorySlots is the SlotControl of one process: its generations and
// modules live as long as it does.
type MemorySlots struct {
	mu       sync.Mutex
	gens     map[string][]SlotGeneration // by slot, oldest first
	modules  map[string][]byte           // by digest
	statuses map[string]map[string]SlotStatus
	// cands are the candidates by slot, oldest first.
	cands    map[string][]SlotCandidate
	watchers []chan struct{}
}

var _ SlotControl = (*MemorySlots)(nil)

// NewMemorySlots returns an empty MemorySlots.
func NewMemorySlots() *MemorySlots {
	return &MemorySlots{gens: map[string][]SlotGeneration{}, modules: map[string][]byte{}, statuses: map[string]map[string]SlotStatus{},
		cands: map[string][]SlotCandidate{}}
}

func checkSlotGeneration(g SlotGeneration) error {
	if g.Slot == "" || g.Digest == "" || g.Origin == "" {
		return fmt.Errorf("store: put slot generation: slot, digest and origin are required: %w", ErrInvalid)
	}
	if len(g.Config) > 0 {
		return checkDoc("put slot generation "+g.Slot, g.Config)
	}
	return nil
}

func cloneSlotGeneration(g SlotGeneration) SlotGeneration {
	g.Config = slices.Clone(g.Config)
	return g
}

// PutSlotGeneration makes g the slot's desired generation (SlotControl).
func (m *MemorySlots) PutSlotGeneration(_ context.Context, g SlotGeneration, module []byte, onlyFirst bool) (SlotGeneration, bool, error) {
	if err := checkSlotGeneration(g); err != nil {
		return SlotGeneration{}, false, err
	}
	if SameConfig(g.Config, nil) {
		g.Config = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gens := m.gens[g.Slot]
	if n := len(gens); n > 0 {
		last := gens[n-1]
		if onlyFirst || (last.Digest == g.Digest && SameConfig(last.Config, g.Config)) {
			return cloneSlotGeneration(last), false, nil
		}
	}
	g.Number = m.nextNumberLocked(g.Slot)
	if module == nil {
		if _, ok := m.modules[g.Digest]; !ok {
			return SlotGeneration{}, false, fmt.Errorf("store: put slot generation %s: module %s: %w", g.Slot, g.Digest, ErrNotFound)
		}
	} else {
		m.modules[g.Digest] = slices.Clone(module)
	}
	m.addGenerationLocked(g)
	return cloneSlotGeneration(g), true, nil
}

// nextNumberLocked is one past every generation and candidate of a slot.
func (m *MemorySlots) nextNumberLocked(slot string) uint64 {
	var n uint64
	if gens := m.gens[slot]; len(gens) > 0 {
		n = gens[len(gens)-1].Number
	}
	if cs := m.cands[slot]; len(cs) > 0 {
		n = max(n, cs[len(cs)-1].Number)
	}
	return n + 1
}

// addGenerationLocked makes g the slot's desired generation and tells the
// watchers.
func (m *MemorySlots) addGenerationLocked(g SlotGeneration) {
	gens := append(m.gens[g.Slot], cloneSlotGeneration(g))
	if len(gens) > KeptSlotGenerations {
		gens = slices.Delete(gens, 0, len(gens)-KeptSlotGenerations)
	}
	m.gens[g.Slot] = gens
	m.dropModulesLocked()
	m.notifyLocked()
}

func (m *MemorySlots) notifyLocked() {
	for _, w := range m.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func cloneCandidate(c SlotCandidate) SlotCandidate {
	c.SlotGeneration = cloneSlotGeneration(c.SlotGeneration)
	return c
}

// ProposeSlotGeneration records a slot's candidate (SlotControl).
func (m *MemorySlots) ProposeSlotGeneration(_ context.Context, c SlotCandidate, module []byte) (SlotCandidate, bool, error) {
	if err := checkSlotGeneration(c.SlotGeneration); err != nil {
		return SlotCandidate{}, false, err
	}
	if SameConfig(c.Config, nil) {
		c.Config = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.cands[c.Slot]
	pending := -1
	if n := len(cs); n > 0 && cs[n-1].State == CandidatePreparing {
		pending = n - 1
		if p := cs[pending]; p.Digest == c.Digest && SameConfig(p.Config, c.Config) {
			return cloneCandidate(p), false, nil
		}
	}
	if gens := m.gens[c.Slot]; len(gens) > 0 && pending < 0 {
		if d := gens[len(gens)-1]; d.Digest == c.Digest && SameConfig(d.Config, c.Config) {
			return SlotCandidate{SlotGeneration: cloneSlotGeneration(d), State: CandidateDesired, Decided: d.Time}, false, nil
		}
	}
	if module == nil {
		if _, ok := m.modules[c.Digest]; !ok {
			return SlotCandidate{}, false, fmt.Errorf("store: propose slot generation %s: module %s: %w", c.Slot, c.Digest, ErrNotFound)
		}
	} else {
		m.modules[c.Digest] = slices.Clone(module)
	}
	c.Number = m.nextNumberLocked(c.Slot)
	c.State, c.By, c.Code, c.Reason, c.Decided = CandidatePreparing, "", "", "", time.Time{}
	if pending >= 0 {
		cs[pending].State, cs[pending].Decided = CandidateSuperseded, c.Time
		cs[pending].Reason = fmt.Sprintf("superseded by generation %d", c.Number)
	}
	cs = append(cs, cloneCandidate(c))
	if len(cs) > KeptSlotGenerations {
		cs = slices.Delete(cs, 0, len(cs)-KeptSlotGenerations)
	}
	m.cands[c.Slot] = cs
	m.dropModulesLocked()
	m.notifyLocked()
	return cloneCandidate(c), true, nil
}

// PendingSlotCandidates lists the candidates being prepared (SlotControl).
func (m *MemorySlots) PendingSlotCandidates(context.Context) ([]SlotCandidate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SlotCandidate{}
	for _, cs := range m.cands {
		if n := len(cs); n > 0 && cs[n-1].State == CandidatePreparing {
			out = append(out, cloneCandidate(cs[n-1]))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}

// SlotCandidates lists a slot's kept candidates (SlotControl).
func (m *MemorySlots) SlotCandidates(_ context.Context, slot string) ([]SlotCandidate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SlotCandidate{}
	for _, c := range m.cands[slot] {
		out = append(out, cloneCandidate(c))
	}
	return out, nil
}

// DecideSlotCandidate decides a candidate being prepared (SlotControl).
func (m *MemorySlots) DecideSlotCandidate(_ context.Context, slot string, number uint64, d SlotDecision) (SlotCandidate, bool, error) {
	if d.State != CandidateDesired && d.State != CandidateRefused {
		return SlotCandidate{}, false, fmt.Errorf("store: decide slot candidate %s@%d: state %q: %w", slot, number, d.State, ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.cands[slot]
	i := slices.IndexFunc(cs, func(c SlotCandidate) bool { return c.Number == number })
	if i < 0 {
		return SlotCandidate{}, false, fmt.Errorf("store: decide slot candidate %s@%d: %w", slot, number, ErrNotFound)
	}
	c := &cs[i]
	if c.State != CandidatePreparing {
		return cloneCandidate(*c), false, nil
	}
	c.State, c.Decided = d.State, d.Time
	if d.State == CandidateRefused {
		c.By, c.Code, c.Reason = d.By, d.Code, d.Reason
		m.dropModulesLocked() // its module, unless a kept generation's
		m.notifyLocked()
		return cloneCandidate(*c), true, nil
	}
	if gens := m.gens[slot]; len(gens) > 0 && gens[len(gens)-1].Number >= number {
		// A generation written past it meanwhile (a first start).
		c.State, c.Reason = CandidateSuperseded, fmt.Sprintf("superseded by generation %d", gens[len(gens)-1].Number)
		m.notifyLocked()
		return cloneCandidate(*c), false, nil
	}
	c.Ref = d.Ref
	m.addGenerationLocked(c.SlotGeneration)
	return cloneCandidate(*c), true, nil
}

// dropModulesLocked forgets the modules no kept generation names.
func (m *MemorySlots) dropModulesLocked() {
	used := map[string]bool{}
	for _, gens := range m.gens {
		for _, g := range gens {
			used[g.Digest] = true
		}
	}
	for _, cs := range m.cands {
		for _, c := range cs {
			if c.State == CandidatePreparing {
				used[c.Digest] = true
			}
		}
	}
	for d := range m.modules {
		if !used[d] {
			delete(m.modules, d)
		}
	}
}

// DesiredSlots lists every slot's desired generation (SlotControl).
func (m *MemorySlots) DesiredSlots(context.Context) ([]SlotGeneration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SlotGeneration{}
	for _, gens := range m.gens {
		out = append(out, cloneSlotGeneration(gens[len(gens)-1]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}

// SlotGenerations lists a slot's kept generations (SlotControl).
func (m *MemorySlots) SlotGenerations(_ context.Context, slot string) ([]SlotGeneration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SlotGeneration{}
	for _, g := range m.gens[slot] {
		out = append(out, cloneSlotGeneration(g))
	}
	return out, nil
}

// SlotModule returns a kept module by digest (SlotControl).
func (m *MemorySlots) SlotModule(_ context.Context, digest string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.modules[digest]
	if !ok {
		return nil, fmt.Errorf("store: slot module %s: %w", digest, ErrNotFound)
	}
	return slices.Clone(b), nil
}

// ReportSlot records an instance's report of a slot (SlotControl).
func (m *MemorySlots) ReportSlot(_ context.Context, st SlotStatus) error {
	if st.Slot == "" || st.Instance == "" {
		return fmt.Errorf("store: report slot: slot and instance are required: %w", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.statuses[st.Slot] == nil {
		m.statuses[st.Slot] = map[string]SlotStatus{}
	}
	m.statuses[st.Slot][st.Instance] = st
	return nil
}

// SlotStatuses lists the instances' reports of a slot (SlotControl).
func (m *MemorySlots) SlotStatuses(_ context.Context, slot string) ([]SlotStatus, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SlotStatus{}
	for _, st := range m.statuses[slot] {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// SlotChanges receives after every new desired generation (SlotControl).
func (m *MemorySlots) SlotChanges(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers = append(m.watchers, ch)
	m.mu.Unlock()
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.watchers = slices.DeleteFunc(m.watchers, func(c chan struct{}) bool { return c == ch })
	}()
	return ch
}
