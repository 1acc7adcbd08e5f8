package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// SlotCounts are one instance's counters of one slot generation: the
// calls it served, by outcome, and their latency, with the probes (the
// load check's and self-tests' calls) counted apart.
type SlotCounts struct {
	Slot string `json:"slot"`
	// Number and Digest name the generation (the store's number, and its
	// module's digest).
	Number   uint64 `json:"number"`
	Digest   string `json:"digest"`
	Instance string `json:"instance"`
	// Calls served; their total latency and their count per latency bound
	// (the bounds are the host's; the last count is above the last bound).
	Calls        uint64        `json:"calls"`
	TotalLatency time.Duration `json:"total_latency"`
	Latency      []uint64      `json:"latency"`
	// Outcomes counts the calls by outcome (pass, success, …, trap, …).
	Outcomes map[string]uint64 `json:"outcomes"`
	Probes   uint64            `json:"probes"`
	Updated  time.Time         `json:"updated"`
}

// SlotCounters keeps the counters of slot generations per instance, so
// that a retired generation's calls are still known after it retired,
// and after the instance restarted. Memory and sqlstore's DB implement
// it; storetest.RunSlotCounters is their conformance suite.
type SlotCounters interface {
	// PutSlotCounts replaces what an instance last wrote of each
	// generation in cs. Counts of a generation older than the slot's
	// oldest kept one (SlotControl) are dropped.
	PutSlotCounts(ctx context.Context, cs []SlotCounts) error
	// SlotCounts lists the counts every instance wrote of a slot's
	// generations, by number, digest and instance.
	SlotCounts(ctx context.Context, slot string) ([]SlotCounts, error)
}

// CheckSlotCounts checks counts before they are written.
func CheckSlotCounts(c SlotCounts) error {
	if c.Slot == "" || c.Digest == "" || c.Instance == "" || c.Number == 0 {
		return fmt.Errorf("store: put slot counts: slot, number, digest and instance are required: %w", ErrInvalid)
	}
	return nil
}

// SortSlotCounts orders counts by number, digest and instance.
func SortSlotCounts(cs []SlotCounts) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Number != b.Number {
			return a.Number < b.Number
		}
		if a.Digest != b.Digest {
			return a.Digest < b.Digest
		}
		return a.Instance < b.Instance
	})
}

// MemorySlotCounts is the SlotCounters of one process. Given the
// SlotControl whose history bounds it (nil: none), it drops the counts of
// generations no longer kept.
type MemorySlotCounts struct {
	control SlotControl
	mu      sync.Mutex
	counts  map[string]map[[3]string]SlotCounts // by slot, then number, digest, instance
}

var _ SlotCounters = (*MemorySlotCounts)(nil)

// NewMemorySlotCounts returns an empty MemorySlotCounts bounded by
// control's kept generations.
func NewMemorySlotCounts(control SlotControl) *MemorySlotCounts {
	return &MemorySlotCounts{control: control, counts: map[string]map[[3]string]SlotCounts{}}
}

func cloneSlotCounts(c SlotCounts) SlotCounts {
	c.Latency, c.Outcomes = slices.Clone(c.Latency), maps.Clone(c.Outcomes)
	return c
}

// PutSlotCounts replaces an instance's counts (SlotCounters).
func (m *MemorySlotCounts) PutSlotCounts(ctx context.Context, cs []SlotCounts) error {
	for _, c := range cs {
		if err := CheckSlotCounts(c); err != nil {
			return err
		}
	}
	oldest := map[string]uint64{}
	if m.control != nil {
		for _, c := range cs {
			if _, ok := oldest[c.Slot]; ok {
				continue
			}
			gens, err := m.control.SlotGenerations(ctx, c.Slot)
			if err != nil {
				return fmt.Errorf("store: put slot counts: %w", err)
			}
			if len(gens) > 0 {
				oldest[c.Slot] = gens[0].Number
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		if m.counts[c.Slot] == nil {
			m.counts[c.Slot] = map[[3]string]SlotCounts{}
		}
		m.counts[c.Slot][[3]string{fmt.Sprint(c.Number), c.Digest, c.Instance}] = cloneSlotCounts(c)
	}
	for slot, o := range oldest {
		for k, c := range m.counts[slot] {
			if c.Number < o {
				delete(m.counts[slot], k)
			}
		}
	}
	return nil
}

// SlotCounts lists a slot's counts (SlotCounters).
func (m *MemorySlotCounts) SlotCounts(_ context.Context, slot string) ([]SlotCounts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SlotCounts{}
	for _, c := range m.counts[slot] {
		out = append(out, cloneSlotCounts(c))
	}
	SortSlotCounts(out)
	return out, nil
}
