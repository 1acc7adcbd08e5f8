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
	t.Run("candidates", func(t *testing.T) { t.Parallel(); testSlotCandidates(t, open(t)) })
}

// testSlotCandidates: a candidate takes the next number, a later one
// supersedes it, the same one again changes nothing, one that becomes
// desired is the slot's desired generation under its number, a refused
// one records who and why, a decided one stays decided, and the module
// of a candidate being prepared is kept.
func testSlotCandidates(t *testing.T, c store.SlotControl) {
	deadline := Clock.Add(2 * time.Minute)
	propose := func(digest, config string, module []byte) (store.SlotCandidate, bool) {
		t.Helper()
		got, added, err := c.ProposeSlotGeneration(bg, store.SlotCandidate{SlotGeneration: slotGen("WriteGate", digest, config, store.SlotOriginAdmin),
			Deadline: deadline}, module)
		must(t, err)
		return got, added
	}
	if _, _, err := c.PutSlotGeneration(bg, slotGen("WriteGate", "aa", "", store.SlotOriginStart), []byte("a"), true); err != nil {
		t.Fatal(err)
	}
	type step struct {
		digest, config string
		number         uint64
		added          bool
		state          string
	}
	for i, s := range []step{
		{"aa", "", 1, false, store.CandidateDesired}, // the desired one: nothing to prepare
		{"bb", "", 2, true, store.CandidatePreparing},
		{"bb", "", 2, false, store.CandidatePreparing}, // the same again
		{"cc", `{"x":1}`, 3, true, store.CandidatePreparing},
	} {
		got, added := propose(s.digest, s.config, []byte(s.digest))
		if got.Number != s.number || added != s.added || got.State != s.state || !got.Deadline.Equal(map[bool]time.Time{true: deadline, false: got.Deadline}[s.state == store.CandidatePreparing]) {
			t.Fatalf("step %d: %+v added %v, want %d %v %s", i, got, added, s.number, s.added, s.state)
		}
	}
	pending, err := c.PendingSlotCandidates(bg)
	must(t, err)
	if len(pending) != 1 || pending[0].Number != 3 || string(pending[0].Config) != `{"x":1}` || !pending[0].Deadline.Equal(deadline) {
		t.Fatalf("pending: %+v", pending)
	}
	cands, err := c.SlotCandidates(bg, "WriteGate")
	must(t, err)
	if len(cands) != 2 || cands[0].State != store.CandidateSuperseded || cands[0].Reason != "superseded by generation 3" || cands[1].State != store.CandidatePreparing {
		t.Fatalf("candidates: %+v", cands)
	}
	// The module of the superseded candidate is gone; the pending one's is kept.
	_, err = c.SlotModule(bg, "bb")
	wantIs(t, err, store.ErrNotFound, "bb")
	if m, err := c.SlotModule(bg, "cc"); err != nil || string(m) != "cc" {
		t.Fatalf("module cc: %q %v", m, err)
	}
	at := Clock.Add(time.Minute)
	got, decided, err := c.DecideSlotCandidate(bg, "WriteGate", 3, store.SlotDecision{State: store.CandidateDesired, Ref: "writegate@1.1.0", Time: at})
	must(t, err)
	if !decided || got.State != store.CandidateDesired || got.Ref != "writegate@1.1.0" || !got.Decided.Equal(at) {
		t.Fatalf("desired: %+v %v", got, decided)
	}
	desired, err := c.DesiredSlots(bg)
	must(t, err)
	if len(desired) != 1 || desired[0].Number != 3 || desired[0].Digest != "cc" || desired[0].Ref != "writegate@1.1.0" || string(desired[0].Config) != `{"x":1}` {
		t.Fatalf("desired slots: %+v", desired)
	}
	// Decided already: nothing changes.
	got, decided, err = c.DecideSlotCandidate(bg, "WriteGate", 3, store.SlotDecision{State: store.CandidateRefused, By: "warden-b", Time: at})
	must(t, err)
	if decided || got.State != store.CandidateDesired {
		t.Fatalf("decided twice: %+v %v", got, decided)
	}
	// A refused candidate: the desired generation stays.
	if got, added := propose("dd", "", []byte("d")); got.Number != 4 || !added {
		t.Fatalf("candidate 4: %+v %v", got, added)
	}
	got, decided, err = c.DecideSlotCandidate(bg, "WriteGate", 4, store.SlotDecision{State: store.CandidateRefused, By: "warden-b",
		Code: "self_test_failed", Reason: "trapped", Time: at})
	must(t, err)
	if !decided || got.State != store.CandidateRefused || got.By != "warden-b" || got.Code != "self_test_failed" || got.Reason != "trapped" {
		t.Fatalf("refused: %+v %v", got, decided)
	}
	if desired, err := c.DesiredSlots(bg); err != nil || desired[0].Number != 3 {
		t.Fatalf("desired after a refusal: %+v %v", desired, err)
	}
	if pending, err := c.PendingSlotCandidates(bg); err != nil || len(pending) != 0 {
		t.Fatalf("pending after a refusal: %+v %v", pending, err)
	}
	// The refused candidate's module is gone.
	_, err = c.SlotModule(bg, "dd")
	wantIs(t, err, store.ErrNotFound, "dd")
	// A rollback candidate needs no module; the next number follows the
	// refused candidate's.
	rb := store.SlotCandidate{SlotGeneration: slotGen("WriteGate", "aa", "", store.SlotOriginRollback), Deadline: deadline}
	rb.From = 1
	if got, added, err := c.ProposeSlotGeneration(bg, rb, nil); err != nil || got.Number != 5 || !added || got.From != 1 {
		t.Fatalf("rollback candidate: %+v %v %v", got, added, err)
	}
	_, _, err = c.ProposeSlotGeneration(bg, store.SlotCandidate{SlotGeneration: slotGen("WriteGate", "zz", "", store.SlotOriginRollback)}, nil)
	wantIs(t, err, store.ErrNotFound, "module zz")
	_, _, err = c.DecideSlotCandidate(bg, "WriteGate", 99, store.SlotDecision{State: store.CandidateRefused, Time: at})
	wantIs(t, err, store.ErrNotFound, "WriteGate@99")
	_, _, err = c.DecideSlotCandidate(bg, "WriteGate", 5, store.SlotDecision{State: store.CandidatePreparing, Time: at})
	wantIs(t, err, store.ErrInvalid, "state")
	// A first generation written past a candidate (an instance starting
	// meanwhile) supersedes it: it never becomes desired.
	first := store.SlotCandidate{SlotGeneration: slotGen("Evidence", "e1", "", store.SlotOriginAdmin), Deadline: deadline}
	if got, added, err := c.ProposeSlotGeneration(bg, first, []byte("e1")); err != nil || got.Number != 1 || !added {
		t.Fatalf("first candidate of Evidence: %+v %v %v", got, added, err)
	}
	if got, added, err := c.PutSlotGeneration(bg, slotGen("Evidence", "e0", "", store.SlotOriginStart), []byte("e0"), true); err != nil || got.Number != 2 || !added {
		t.Fatalf("start generation of Evidence: %+v %v %v", got, added, err)
	}
	got, decided, err = c.DecideSlotCandidate(bg, "Evidence", 1, store.SlotDecision{State: store.CandidateDesired, Ref: "evidence@1.0.0", Time: at})
	must(t, err)
	if decided || got.State != store.CandidateSuperseded || got.Reason != "superseded by generation 2" {
		t.Fatalf("a candidate a start generation passed: %+v %v", got, decided)
	}
	if gens, err := c.SlotGenerations(bg, "Evidence"); err != nil || len(gens) != 1 || gens[0].Digest != "e0" {
		t.Fatalf("Evidence's generations: %+v %v", gens, err)
	}
	// The prepared candidate an instance reports.
	must(t, c.ReportSlot(bg, store.SlotStatus{Slot: "WriteGate", Instance: "warden-a", Serving: 3, Digest: "cc", Since: at, Prepared: 5, Updated: at}))
	if sts, err := c.SlotStatuses(bg, "WriteGate"); err != nil || len(sts) != 1 || sts[0].Prepared != 5 {
		t.Fatalf("statuses: %+v %v", sts, err)
	}
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
