package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// RunSlotControl is the conformance suite of store.SlotControl: open
// returns a new, empty control plane.
func RunSlotControl(t *testing.T, open func(t *testing.T) store.SlotControl) {
	t.Run("generations", func(t *testing.T) { t.Parallel(); testSlotGenerations(t, open(t)) })
	t.Run("history", func(t *testing.T) { t.Parallel(); testSlotHistory(t, open(t)) })
	t.Run("status", func(t *testing.T) { t.Parallel(); testSlotStatus(t, open(t)) })
}

func slotGen(slot, digest, config, origin string) store.SlotGeneration {
	g := store.SlotGeneration{Slot: slot, Digest: digest, Ref: "writegate@1.0.0", Origin: origin, Instance: "warden-a", Time: Clock.Add(time.Nanosecond)}
	if config != "" {
		g.Config = json.RawMessage(config)
	}
	return g
}

func testSlotGenerations(t *testing.T, c store.SlotControl) {
	put := func(g store.SlotGeneration, module []byte, onlyFirst bool) (uint64, bool) {
		t.Helper()
		got, added, err := c.PutSlotGeneration(bg, g, module, onlyFirst)
		must(t, err)
		return got.Number, added
	}
	type step struct {
		g         store.SlotGeneration
		module    string
		onlyFirst bool
		number    uint64
		added     bool
	}
	for i, s := range []step{
		{slotGen("WriteGate", "aa", "", store.SlotOriginStart), "\x00asm-a", true, 1, true},
		// Another instance starting with another module: the first stays.
		{slotGen("WriteGate", "bb", "", store.SlotOriginStart), "\x00asm-b", true, 1, false},
		{slotGen("WriteGate", "bb", `{"x":1}`, store.SlotOriginAdmin), "\x00asm-b", false, 2, true},
		// The same module and configuration again: no new generation.
		{slotGen("WriteGate", "bb", `{"x":1}`, store.SlotOriginWatch), "\x00asm-b", false, 2, false},
		// The same module with another configuration: a new one.
		{slotGen("WriteGate", "bb", "", store.SlotOriginAdmin), "", false, 3, true},
		{slotGen("Evidence", "cc", "null", store.SlotOriginStart), "\x00asm-c", true, 1, true},
	} {
		var module []byte
		if s.module != "" {
			module = []byte(s.module)
		}
		if n, added := put(s.g, module, s.onlyFirst); n != s.number || added != s.added {
			t.Fatalf("step %d: number %d added %v, want %d %v", i, n, added, s.number, s.added)
		}
	}
	_, _, err := c.PutSlotGeneration(bg, slotGen("WriteGate", "dd", "", store.SlotOriginRollback), nil, false)
	wantIs(t, err, store.ErrNotFound, "module dd")
	_, _, err = c.PutSlotGeneration(bg, slotGen("", "dd", "", store.SlotOriginAdmin), []byte("x"), false)
	wantIs(t, err, store.ErrInvalid, "slot, digest and origin are required")
	_, _, err = c.PutSlotGeneration(bg, slotGen("WriteGate", "dd", "{", store.SlotOriginAdmin), []byte("x"), false)
	wantIs(t, err, store.ErrInvalid, "not JSON")

	desired, err := c.DesiredSlots(bg)
	must(t, err)
	if len(desired) != 2 || desired[0].Slot != "Evidence" || desired[0].Number != 1 || desired[0].Config != nil ||
		desired[1].Slot != "WriteGate" || desired[1].Number != 3 || desired[1].Digest != "bb" || desired[1].Config != nil ||
		desired[1].Origin != store.SlotOriginAdmin || desired[1].Instance != "warden-a" || !desired[1].Time.Equal(Clock.Add(time.Nanosecond)) {
		t.Fatalf("desired: %+v", desired)
	}
	gens, err := c.SlotGenerations(bg, "WriteGate")
	must(t, err)
	if len(gens) != 3 || gens[0].Digest != "aa" || gens[1].Digest != "bb" || string(gens[1].Config) != `{"x":1}` || gens[2].Number != 3 {
		t.Fatalf("generations: %+v", gens)
	}
	// A rollback names its source and needs no module.
	rb := slotGen("WriteGate", "aa", "", store.SlotOriginRollback)
	rb.From = 1
	if n, added := put(rb, nil, false); n != 4 || !added {
		t.Fatalf("rollback: %d %v", n, added)
	}
	if m, err := c.SlotModule(bg, "aa"); err != nil || string(m) != "\x00asm-a" {
		t.Fatalf("module aa: %q %v", m, err)
	}
	_, err = c.SlotModule(bg, "zz")
	wantIs(t, err, store.ErrNotFound, "zz")
	if none, err := c.SlotGenerations(bg, "Nothing"); err != nil || len(none) != 0 {
		t.Fatalf("generations of an unknown slot: %+v %v", none, err)
	}
}

func testSlotHistory(t *testing.T, c store.SlotControl) {
	for i := range store.KeptSlotGenerations + 3 {
		d := fmt.Sprintf("d%02d", i)
		if _, _, err := c.PutSlotGeneration(bg, slotGen("ArgPolicy", d, "", store.SlotOriginAdmin), []byte(d), false); err != nil {
			t.Fatal(err)
		}
	}
	gens, err := c.SlotGenerations(bg, "ArgPolicy")
	must(t, err)
	if len(gens) != store.KeptSlotGenerations || gens[0].Number != 4 || gens[len(gens)-1].Number != store.KeptSlotGenerations+3 {
		t.Fatalf("kept: %d, from %d to %d", len(gens), gens[0].Number, gens[len(gens)-1].Number)
	}
	// The modules of generations no longer kept are gone.
	_, err = c.SlotModule(bg, "d00")
	wantIs(t, err, store.ErrNotFound, "d00")
	if m, err := c.SlotModule(bg, "d03"); err != nil || string(m) != "d03" {
		t.Fatalf("module d03: %q %v", m, err)
	}
}

func testSlotStatus(t *testing.T, c store.SlotControl) {
	at := Clock.Add(time.Second)
	for _, st := range []store.SlotStatus{
		{Slot: "WriteGate", Instance: "warden-b", Serving: 1, Digest: "aa", Since: Clock, Updated: Clock},
		{Slot: "WriteGate", Instance: "warden-a", Serving: 2, Digest: "bb", Since: at, Updated: at},
		{Slot: "WriteGate", Instance: "warden-b", Serving: 1, Digest: "aa", Since: Clock, Refused: 2, Reason: "self-test failed", Updated: at},
		{Slot: "Evidence", Instance: "warden-a", Serving: 1, Digest: "cc", Since: Clock, Updated: Clock},
	} {
		must(t, c.ReportSlot(bg, st))
	}
	wantIs(t, c.ReportSlot(bg, store.SlotStatus{Slot: "WriteGate"}), store.ErrInvalid, "slot and instance are required")
	sts, err := c.SlotStatuses(bg, "WriteGate")
	must(t, err)
	if len(sts) != 2 || sts[0].Instance != "warden-a" || sts[0].Serving != 2 || !sts[0].Since.Equal(at) ||
		sts[1].Instance != "warden-b" || sts[1].Serving != 1 || sts[1].Refused != 2 || sts[1].Reason != "self-test failed" || !sts[1].Updated.Equal(at) {
		t.Fatalf("statuses: %+v", sts)
	}
	// Changes, where the store can tell, arrive after a new generation.
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	ch := c.SlotChanges(ctx)
	if ch == nil {
		return
	}
	time.Sleep(200 * time.Millisecond) // the listener starts
	if _, _, err := c.PutSlotGeneration(bg, slotGen("Fingerprint", "ee", "", store.SlotOriginAdmin), []byte("e"), false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no change arrived")
	}
}
