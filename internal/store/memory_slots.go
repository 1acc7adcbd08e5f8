package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// MemorySlots is the SlotControl of one process: its generations and
// modules live as long as it does.
type MemorySlots struct {
	mu       sync.Mutex
	gens     map[string][]SlotGeneration // by slot, oldest first
	modules  map[string][]byte           // by digest
	statuses map[string]map[string]SlotStatus
	watchers []chan struct{}
}

var _ SlotControl = (*MemorySlots)(nil)

// NewMemorySlots returns an empty MemorySlots.
func NewMemorySlots() *MemorySlots {
	return &MemorySlots{gens: map[string][]SlotGeneration{}, modules: map[string][]byte{}, statuses: map[string]map[string]SlotStatus{}}
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
		g.Number = last.Number + 1
	} else {
		g.Number = 1
	}
	if module == nil {
		if _, ok := m.modules[g.Digest]; !ok {
			return SlotGeneration{}, false, fmt.Errorf("store: put slot generation %s: module %s: %w", g.Slot, g.Digest, ErrNotFound)
		}
	} else {
		m.modules[g.Digest] = slices.Clone(module)
	}
	gens = append(gens, cloneSlotGeneration(g))
	if len(gens) > KeptSlotGenerations {
		gens = slices.Delete(gens, 0, len(gens)-KeptSlotGenerations)
	}
	m.gens[g.Slot] = gens
	m.dropModulesLocked()
	for _, w := range m.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	return cloneSlotGeneration(g), true, nil
}

// dropModulesLocked forgets the modules no kept generation names.
func (m *MemorySlots) dropModulesLocked() {
	used := map[string]bool{}
	for _, gens := range m.gens {
		for _, g := range gens {
			used[g.Digest] = true
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
