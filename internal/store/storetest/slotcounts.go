package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// SlotStore is a slots' control plane that keeps their generations'
// counters too, as a database does.
type SlotStore interface {
	store.SlotControl
	store.SlotCounters
}

// RunSlotCounters is the conformance suite of store.SlotCounters: open
// returns a new, empty store whose counters are bounded by its own kept
// generations.
func RunSlotCounters(t *testing.T, open func(t *testing.T) SlotStore) {
	t.Run("replace", func(t *testing.T) { t.Parallel(); testSlotCountsReplace(t, open(t)) })
	t.Run("bounded", func(t *testing.T) { t.Parallel(); testSlotCountsBounded(t, open(t)) })
	t.Run("invalid", func(t *testing.T) { t.Parallel(); testSlotCountsInvalid(t, open(t)) })
}

func slotCounts(number uint64, digest, instance string, calls uint64) store.SlotCounts {
	return store.SlotCounts{Slot: "WriteGate", Number: number, Digest: digest, Instance: instance, Calls: calls,
		TotalLatency: time.Duration(calls) * 1500 * time.Microsecond, Latency: []uint64{0, 0, 0, 0, 0, calls, 0, 0, 0, 0, 0, 0},
		Outcomes: map[string]uint64{"pass": calls - 1, "deferred": 1}, Probes: 3, Updated: Clock.Add(time.Duration(calls) * time.Nanosecond)}
}

func testSlotCountsReplace(t *testing.T, s SlotStore) {
	if got, err := s.SlotCounts(bg, "WriteGate"); err != nil || len(got) != 0 {
		t.Fatalf("counts of a new store: %+v, %v", got, err)
	}
	must(t, s.PutSlotCounts(bg, nil))
	must(t, s.PutSlotCounts(bg, []store.SlotCounts{slotCounts(2, "bb", "warden-b", 5), slotCounts(1, "aa", "warden-a", 7)}))
	// A second write of an instance's generation replaces the first; the
	// same number with another digest is another generation.
	must(t, s.PutSlotCounts(bg, []store.SlotCounts{slotCounts(1, "aa", "warden-a", 9), slotCounts(1, "zz", "warden-a", 2)}))
	other := slotCounts(1, "aa", "warden-a", 4)
	other.Slot = "Evidence"
	must(t, s.PutSlotCounts(bg, []store.SlotCounts{other}))
	got, err := s.SlotCounts(bg, "WriteGate")
	must(t, err)
	want := []store.SlotCounts{slotCounts(1, "aa", "warden-a", 9), slotCounts(1, "zz", "warden-a", 2), slotCounts(2, "bb", "warden-b", 5)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("counts\n got %+v\nwant %+v", got, want)
	}
}

func testSlotCountsBounded(t *testing.T, s SlotStore) {
	for i := range store.KeptSlotGenerations + 2 {
		_, _, err := s.PutSlotGeneration(bg, slotGen("WriteGate", string(rune('a'+i)), "", store.SlotOriginAdmin), []byte{0, byte(i)}, false)
		must(t, err)
	}
	// Generations 1 and 2 are no longer kept: their counts are dropped.
	must(t, s.PutSlotCounts(bg, []store.SlotCounts{slotCounts(1, "a", "warden-a", 2), slotCounts(2, "b", "warden-a", 2), slotCounts(3, "c", "warden-a", 2)}))
	got, err := s.SlotCounts(bg, "WriteGate")
	must(t, err)
	if len(got) != 1 || got[0].Number != 3 {
		t.Fatalf("counts kept: %+v", got)
	}
}

func testSlotCountsInvalid(t *testing.T, s SlotStore) {
	for _, c := range []store.SlotCounts{
		{Number: 1, Digest: "aa", Instance: "warden-a"},
		{Slot: "WriteGate", Digest: "aa", Instance: "warden-a"},
		{Slot: "WriteGate", Number: 1, Instance: "warden-a"},
		{Slot: "WriteGate", Number: 1, Digest: "aa"},
	} {
		if err := s.PutSlotCounts(bg, []store.SlotCounts{c}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("put %+v: %v, want ErrInvalid", c, err)
		}
	}
}
