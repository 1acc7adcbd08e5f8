package server

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/store"
)

// CountsFlush is how often KeepCounts writes the slot generations'
// counters to the store (they are written at a swap and at Close too).
const CountsFlush = 10 * time.Second

// KeptGeneration is a generation the store keeps of a slot, with the
// counters every instance wrote of it.
type KeptGeneration struct {
	store.SlotGeneration
	// Counts sums the instances' counters of the generation; absent when
	// none has written any.
	Counts *GenerationCounts `json:"counts,omitempty"`
}

// GenerationCounts are a slot generation's counters summed over the
// instances that served it: the calls it served, by outcome (named as
// the outcome label of warden_plugin_calls_total), and their latency,
// with the load check's and self-tests' probes counted apart.
type GenerationCounts struct {
	Calls          uint64            `json:"calls"`
	Outcomes       map[string]uint64 `json:"outcomes"`
	LatencyMsTotal float64           `json:"latency_ms_total"`
	Latency        Histogram         `json:"latency"`
	// P50Ms and P99Ms are the upper bounds of the latency buckets that
	// hold the median and the 99th percentile call; absent with no calls,
	// or when the quantile is above the last bound.
	P50Ms  *float64 `json:"p50_ms,omitempty"`
	P99Ms  *float64 `json:"p99_ms,omitempty"`
	Probes uint64   `json:"probes"`
	// Instances are those whose counters are summed; Updated the newest
	// of their writes.
	Instances []string  `json:"instances"`
	Updated   time.Time `json:"updated"`
}

// outcomeCounts are a plugin's calls by outcome, as /metrics names them.
func outcomeCounts(st host.Stats) map[string]uint64 {
	return map[string]uint64{
		"pass": st.Pass, "success": st.Success, "failed": st.Failed, "rejected": st.Rejected, "deferred": st.Deferred,
		"trap": st.Traps, "timeout": st.Timeouts, "memory_limit": st.MemoryLimits, "contract_violation": st.Violations,
		"output_too_large": st.OutputTooLarge, "input_too_large": st.InputTooLarge, "unavailable": st.Unavailable,
	}
}

// countKey names one generation of a slot on this instance.
type countKey struct {
	slot   string
	number uint64
	digest string
}

// genCounts writes this instance's counters of its slots' generations to
// the store. A generation this instance served before a restart (the
// same instance name) goes on from what it wrote then: base.
type genCounts struct {
	store store.SlotCounters
	mu    sync.Mutex // serialises flushes
	base  map[countKey]store.SlotCounts
	last  map[countKey]store.SlotCounts
}

func newGenCounts(c store.SlotCounters) *genCounts {
	return &genCounts{store: c, base: map[countKey]store.SlotCounts{}, last: map[countKey]store.SlotCounts{}}
}

// flushCounts writes the counters of the named slots' generations (every
// slot's with none) that changed since they were last written. A store
// that fails is logged; the next flush tries again.
func (s *Server) flushCounts(ctx context.Context, names ...string) {
	gc := s.pluginsOf().counts
	s.slotMu.Lock()
	slots := map[string]*host.Slot{}
	for n, sl := range s.slots {
		if len(names) == 0 || slices.Contains(names, n) {
			slots[n] = sl
		}
	}
	s.slotMu.Unlock()
	gc.mu.Lock()
	defer gc.mu.Unlock()
	me, now := s.instanceName(), s.opt.Now().UTC()
	var out []store.SlotCounts
	for name, sl := range slots {
		read := false
		for _, g := range sl.History() {
			st, ok := sl.GenerationStats(g.Number)
			if !ok || g.Number == 0 {
				continue
			}
			k := countKey{name, g.Number, g.Digest}
			base, known := gc.base[k]
			if !known && !read {
				read = true
				stored, err := gc.store.SlotCounts(ctx, name)
				if err != nil {
					s.log.Error("slot counters not read", "slot", name, "err", err)
					return
				}
				for _, c := range stored {
					ck := countKey{name, c.Number, c.Digest}
					if _, ok := gc.base[ck]; !ok && c.Instance == me {
						gc.base[ck] = c
					}
				}
				base = gc.base[k]
			}
			if !known {
				gc.base[k] = base
			}
			c := addCounts(base, st)
			c.Slot, c.Number, c.Digest, c.Instance = name, g.Number, g.Digest, me
			if last, ok := gc.last[k]; ok && sameCounts(last, c) {
				continue
			}
			c.Updated = now
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return
	}
	if err := gc.store.PutSlotCounts(context.WithoutCancel(ctx), out); err != nil {
		s.log.Error("slot counters not written", "err", err)
		return
	}
	for _, c := range out {
		gc.last[countKey{c.Slot, c.Number, c.Digest}] = c
	}
}

// addCounts is base with a generation's counters added.
func addCounts(base store.SlotCounts, st host.Stats) store.SlotCounts {
	c := store.SlotCounts{Calls: base.Calls + st.Calls, TotalLatency: base.TotalLatency + st.TotalLatency,
		Probes: base.Probes + st.Probes, Outcomes: outcomeCounts(st)}
	for k, v := range base.Outcomes {
		c.Outcomes[k] += v
	}
	c.Latency = make([]uint64, max(len(st.Latency), len(base.Latency)))
	for i := range c.Latency {
		if i < len(st.Latency) {
			c.Latency[i] += st.Latency[i]
		}
		if i < len(base.Latency) {
			c.Latency[i] += base.Latency[i]
		}
	}
	return c
}

func sameCounts(a, b store.SlotCounts) bool {
	return a.Calls == b.Calls && a.Probes == b.Probes && a.TotalLatency == b.TotalLatency &&
		slices.Equal(a.Latency, b.Latency) && maps.Equal(a.Outcomes, b.Outcomes)
}

// KeepCounts writes the slot generations' counters to the store every
// CountsFlush until ctx ends, and once more then.
func (s *Server) KeepCounts(ctx context.Context) {
	t := time.NewTicker(CountsFlush)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flushCounts(context.WithoutCancel(ctx))
			return
		case <-t.C:
			s.flushCounts(ctx)
		}
	}
}

// keptWithCounts adds to a slot's kept generations the counters every
// instance wrote of them (a generation's number and digest both match),
// after writing this instance's.
func (s *Server) keptWithCounts(ctx context.Context, name string, kept []store.SlotGeneration) []KeptGeneration {
	s.flushCounts(ctx, name)
	out := make([]KeptGeneration, len(kept))
	for i, g := range kept {
		out[i] = KeptGeneration{SlotGeneration: g}
	}
	cs, err := s.pluginsOf().counts.store.SlotCounts(ctx, name)
	if err != nil {
		s.log.Error("slot counters not read", "slot", name, "err", err)
		return out
	}
	for i, g := range kept {
		var sum *GenerationCounts
		var latency []uint64
		var nanos time.Duration
		for _, c := range cs {
			if c.Number != g.Number || c.Digest != g.Digest {
				continue
			}
			if sum == nil {
				sum = &GenerationCounts{Outcomes: map[string]uint64{}, Instances: []string{}}
			}
			sum.Calls += c.Calls
			sum.Probes += c.Probes
			nanos += c.TotalLatency
			for k, v := range c.Outcomes {
				sum.Outcomes[k] += v
			}
			for len(latency) < len(c.Latency) {
				latency = append(latency, 0)
			}
			for j, v := range c.Latency {
				latency[j] += v
			}
			if !slices.Contains(sum.Instances, c.Instance) {
				sum.Instances = append(sum.Instances, c.Instance)
			}
			if c.Updated.After(sum.Updated) {
				sum.Updated = c.Updated
			}
		}
		if sum == nil {
			continue
		}
		for len(latency) < len(host.LatencyBuckets)+1 {
			latency = append(latency, 0)
		}
		sum.LatencyMsTotal = ms(nanos)
		sum.Latency = Histogram{BoundsMs: make([]float64, 0, len(host.LatencyBuckets)), Counts: latency}
		for _, b := range host.LatencyBuckets {
			sum.Latency.BoundsMs = append(sum.Latency.BoundsMs, ms(b))
		}
		sum.P50Ms, sum.P99Ms = sum.Latency.quantile(0.5), sum.Latency.quantile(0.99)
		slices.Sort(sum.Instances)
		out[i].Counts = sum
	}
	return out
}

// quantile is the upper bound of the bucket holding the q-quantile call;
// nil with no calls, or above the last bound.
func (h Histogram) quantile(q float64) *float64 {
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 {
		return nil
	}
	rank := uint64(q*float64(total) + 0.999999)
	rank = max(rank, 1)
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= rank {
			if i < len(h.BoundsMs) {
				b := h.BoundsMs[i]
				return &b
			}
			return nil
		}
	}
	return nil
}
