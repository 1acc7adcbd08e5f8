package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/testdata"
)

// sharedStore is a generation log and a slots' control plane several
// servers share, as instances share a database.
type sharedStore struct {
	*server.MemoryGenerations
	*store.MemorySlots
	*store.MemorySlotCounts
}

// leases are the instances' leases the servers of a test share, as the
// instances sharing a database see each other's.
type leases struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (l *leases) set(name string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until[name] = until
}

func (l *leases) list(context.Context) ([]server.Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []server.Instance{}
	for name, until := range l.until {
		u := until
		out = append(out, server.Instance{ID: name, LeaseUntil: &u})
	}
	return out, nil
}

// TestFleetSlots: servers sharing one store serve a generation installed
// on any of them once every live one has it ready; a rollback through one
// to a kept generation reaches the others; a candidate any of them
// refuses serves nowhere, with the refusing instance and its reason in
// the rollout status; a live instance that does not answer by the
// deadline refuses it, one whose lease ran out is not waited for; and a
// server started afterwards serves the desired generation.
func TestFleetSlots(t *testing.T) {
	slots := store.NewMemorySlots()
	shared := sharedStore{server.NewMemoryGenerations(), slots, store.NewMemorySlotCounts(slots)}
	live := &leases{until: map[string]time.Time{}}
	good := host.Digest(testdata.Bytes(t, "good"))
	goodv2 := host.Digest(testdata.Bytes(t, "goodv2"))
	var refuseV2 atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// a gives its candidates 3 s to be prepared, the others a minute.
	instance := func(name string, test host.SelfTest) *fixture {
		live.set(name, time.Now().Add(time.Hour))
		f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
			o.Generations, o.Instance, o.SelfTest, o.Instances = shared, name, test, live.list
			o.PrepareDeadline = time.Minute
			if name == "warden-a" {
				o.PrepareDeadline = 3 * time.Second
			}
		}})
		if err := f.srv.SyncSlots(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); f.srv.Follow(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return f
	}
	a := instance("warden-a", nil)
	b := instance("warden-b", func(ctx context.Context, p *host.Plugin) error {
		if refuseV2.Load() && p.Digest() == goodv2 {
			return errors.New("refused on warden-b")
		}
		return server.DefaultSelfTest(ctx, p)
	})
	slot := func(f *fixture) server.SlotInfo {
		t.Helper()
		var in server.SlotInfo
		if code, eb := f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &in); code != 200 {
			t.Fatalf("slot: %d %+v", code, eb)
		}
		return in
	}
	serves := func(f *fixture, digest string, number uint64) {
		t.Helper()
		in := slot(f)
		if in.Current.Digest != digest || in.Serving != number || in.Desired == nil || in.Desired.Number != number {
			t.Fatalf("serves %s (store generation %d), want %s (%d)", in.Current.Digest, in.Serving, digest, number)
		}
	}
	steps := []struct {
		name         string
		on           *fixture
		method, path string
		body         string
		status       int
		code, msg    string // the error's code and a part of its message
		digest       string // served by a and b afterwards
		number       uint64 // the desired generation afterwards
	}{
		{"install on a", a, "PUT", "/admin/v1/slots/Good?wait=1m", install(t, "good", ""), 201, "", "", good, 1},
		{"swap on a", a, "PUT", "/admin/v1/slots/Good?wait=1m", install(t, "goodv2", ""), 200, "", "", goodv2, 2},
		{"the same again", a, "PUT", "/admin/v1/slots/Good?wait=1m", install(t, "goodv2", ""), 200, "", "", goodv2, 2},
		{"rollback to 1 through b", b, "POST", "/admin/v1/slots/Good/rollback?to=1&wait=1m", "", 200, "", "", good, 3},
		// Refused by both; whichever answers first refuses it for all.
		{"refused everywhere", a, "PUT", "/admin/v1/slots/Good?wait=1m", install(t, "noresult", ""), 422, server.CodePluginRejected,
			"Good@4 refused by warden-", good, 3},
		{"rollback to a refused candidate", b, "POST", "/admin/v1/slots/Good/rollback?to=4", "", 404, server.CodeGenerationNotFound,
			"generation 4: generation not kept (kept: 1 to 3)", good, 3},
		{"rollback to a generation not kept", b, "POST", "/admin/v1/slots/Good/rollback?to=99", "", 404, server.CodeGenerationNotFound, "", good, 3},
		{"rollback to nothing", b, "POST", "/admin/v1/slots/Good/rollback?to=x", "", 400, server.CodeInvalidRequest, "", good, 3},
		{"rollback to two", b, "POST", "/admin/v1/slots/Good/rollback?to=1&to=2", "", 400, server.CodeInvalidRequest, "", good, 3},
		{"rollback with an unknown parameter", b, "POST", "/admin/v1/slots/Good/rollback?from=1", "", 400, server.CodeUnknownField, "", good, 3},
		// The kept generation before the desired one: 2 (4 was refused).
		{"rollback to the previous one", a, "POST", "/admin/v1/slots/Good/rollback?wait=1m", "", 200, "", "", goodv2, 5},
	}
	for _, st := range steps {
		code, eb := st.on.do(t, st.method, st.path, keyAdmin, st.body, nil)
		if code != st.status || eb.Error.Code != st.code || !strings.Contains(eb.Error.Message, st.msg) {
			t.Fatalf("%s: %d %s (%s), want %d %s (%s)", st.name, code, eb.Error.Code, eb.Error.Message, st.status, st.code, st.msg)
		}
		serves(a, st.digest, st.number)
		serves(b, st.digest, st.number)
	}
	in := slot(a)
	if len(in.Kept) != 4 || in.Kept[2].Origin != store.SlotOriginRollback || in.Kept[2].From != 1 || in.Kept[2].Instance != "warden-b" ||
		in.Kept[3].Number != 5 || in.Kept[3].From != 2 || len(in.Instances) != 2 || in.Instances[0].Instance != "warden-a" || in.Instances[1].Serving != 5 {
		t.Fatalf("kept %+v\ninstances %+v", in.Kept, in.Instances)
	}
	if n := len(in.Refused); n == 0 || !strings.Contains(in.Refused[0].Reason, "incompatible") {
		t.Fatalf("refused: %+v", in.Refused)
	}

	// b refuses what a holds ready: neither serves it, a never did, and
	// the rollout names b and why.
	refuseV2.Store(true)
	if code, eb := a.do(t, "POST", "/admin/v1/slots/Good/rollback?to=3&wait=1m", keyAdmin, "", nil); code != 200 {
		t.Fatalf("rollback to 3: %d %+v", code, eb)
	}
	serves(a, good, 6)
	serves(b, good, 6)
	code, eb := a.do(t, "PUT", "/admin/v1/slots/Good?wait=1m", keyAdmin, install(t, "goodv2", ""), nil)
	if code != 422 || eb.Error.Code != server.CodePluginRejected ||
		!strings.HasPrefix(eb.Error.Message, "Good@7 refused by warden-b: ") || !strings.Contains(eb.Error.Message, "refused on warden-b") ||
		!strings.HasSuffix(eb.Error.Message, "; no instance serves it, the desired generation stays") {
		t.Fatalf("install refused by b: %d %+v", code, eb)
	}
	for _, f := range []*fixture{a, b} {
		serves(f, good, 6)
		in := slot(f)
		if ro := in.Rollout; ro == nil || ro.ID != "Good@7" || ro.State != server.RolloutRefused || ro.By != "warden-b" ||
			ro.Code != server.CodePluginRejected || len(ro.Refused) != 1 || ro.Refused[0].Instance != "warden-b" || ro.Refused[0].Refused != 7 {
			t.Fatalf("rollout of a candidate b refused: %+v", in.Rollout)
		}
		for _, g := range in.Generations {
			if g.Digest == goodv2 && g.Number > 5 {
				t.Fatalf("generation %d of the refused candidate served: %+v", g.Number, in.Generations)
			}
		}
	}
	// The refusal ends the rollout at once; a records that it prepared 7
	// when its own preparation ends, which may be after.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		in := slot(a)
		if in.Instances[0].Prepared == 7 && in.Instances[0].Serving == 6 && in.Instances[1].Refused == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances after b refused 7: %+v", in.Instances)
		}
	}

	// A live instance that does not answer refuses the candidate at its
	// deadline; once its lease has run out, it is not waited for.
	refuseV2.Store(false)
	live.set("warden-ghost", time.Now().Add(time.Hour))
	code, eb = a.do(t, "PUT", "/admin/v1/slots/Good?wait=1m", keyAdmin, install(t, "goodv2", ""), nil)
	if code != 409 || eb.Error.Code != server.CodePrepareTimeout || !strings.HasPrefix(eb.Error.Message, "Good@8 refused: warden-ghost did not prepare it by its deadline") {
		t.Fatalf("install with a live instance that does not answer: %d %+v", code, eb)
	}
	serves(a, good, 6)
	serves(b, good, 6)
	live.set("warden-ghost", time.Now().Add(-time.Second))
	var put server.SlotInfo
	if code, eb := a.do(t, "PUT", "/admin/v1/slots/Good?wait=1m", keyAdmin, install(t, "goodv2", ""), &put); code != 200 ||
		put.Rollout == nil || put.Rollout.ID != "Good@9" || put.Rollout.State != server.RolloutDone || !put.Rollout.Done {
		t.Fatalf("install once the silent instance's lease ran out: %d %+v %+v", code, eb, put.Rollout)
	}
	serves(a, goodv2, 9)
	serves(b, goodv2, 9)

	// An instance started afterwards serves the desired generation.
	c := instance("warden-c", nil)
	serves(c, goodv2, 9)
	// Its load check and self-test are counted apart from served calls.
	if st := slot(c).Stats; st.Calls != 0 || st.Pass != 0 || st.Probes == 0 {
		t.Fatalf("c's counters before any call: %+v", st)
	}

	// An instance that holds a lease but has not started its server yet
	// holds a candidate up; once started, it serves the desired
	// generation, prepares the candidate, and the candidate serves.
	live.set("warden-d", time.Now().Add(time.Hour))
	var back server.SlotInfo
	if code, eb := b.do(t, "POST", "/admin/v1/slots/Good/rollback?to=6&wait=0s", keyAdmin, "", &back); code != 202 ||
		back.Rollout == nil || back.Rollout.ID != "Good@10" || back.Rollout.State != server.RolloutPreparing || !slices.Contains(back.Rollout.Pending, "warden-d") {
		t.Fatalf("rollback with warden-d not started: %d %+v %+v", code, eb, back.Rollout)
	}
	d := instance("warden-d", nil)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		in := slot(d)
		if in.Rollout != nil && in.Rollout.Done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout once warden-d started: %+v", in.Rollout)
		}
	}
	for _, f := range []*fixture{a, b, c, d} {
		serves(f, good, 10)
	}
}

// TestFleetBudget: a candidate refused by one instance only, for a setting
// of its own. b's whole plugin instance budget (32 MiB) is smaller than one
// instance of writegate-bigheap (about 40 MiB): b refuses it, a holds it
// ready and never serves it, and both keep the first-party WriteGate; the
// rollout names b and why.
func TestFleetBudget(t *testing.T) {
	slots := store.NewMemorySlots()
	shared := sharedStore{server.NewMemoryGenerations(), slots, store.NewMemorySlotCounts(slots)}
	live := &leases{until: map[string]time.Time{}}
	writegate := firstPartyModules(t)["writegate.wasm"]
	wg := host.Digest(writegate)
	instance := func(name string, budget int64) *fixture {
		live.set(name, time.Now().Add(time.Hour))
		h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), MaxInstanceBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close(context.Background()) })
		f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
			o.Generations, o.Instance, o.Instances, o.Host = shared, name, live.list, h
		}})
		return f
	}
	a := instance("warden-a", 0)
	b := instance("warden-b", 32<<20)
	body, _ := json.Marshal(server.Install{Module: writegate})
	if code, eb := a.do(t, "PUT", "/admin/v1/slots/WriteGate?wait=0s", keyAdmin, string(body), nil); code != 202 {
		t.Fatalf("first-party WriteGate on a: %d %+v", code, eb)
	}
	if err := b.srv.SyncSlots(context.Background()); err != nil {
		t.Fatal(err)
	}
	// b prepares it in the background; the rollout of generation 1 ends
	// once b has swapped.
	settle := func(f *fixture, id string) server.SlotInfo {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			for _, g := range []*fixture{a, b} {
				if err := g.srv.SyncSlots(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			var in server.SlotInfo
			f.do(t, "GET", "/admin/v1/slots/WriteGate", keyAdmin, "", &in)
			if ro := in.Rollout; ro != nil && ro.ID == id && ro.State != server.RolloutPreparing && ro.State != server.RolloutSwapping {
				return in
			}
			if time.Now().After(deadline) {
				t.Fatalf("rollout %s not settled: %+v", id, in.Rollout)
			}
		}
	}
	for _, f := range []*fixture{a, b} {
		if in := settle(f, "WriteGate@1"); in.Current.Digest != wg || in.Serving != 1 || !in.Rollout.Done {
			t.Fatalf("WriteGate@1: serving %s (%d), rollout %+v", in.Current.Digest, in.Serving, in.Rollout)
		}
	}
	big, _ := json.Marshal(server.Install{Module: testdata.Bytes(t, "writegate-bigheap")})
	code, eb := a.do(t, "PUT", "/admin/v1/slots/WriteGate", keyAdmin, string(big), nil)
	if code != 202 {
		t.Fatalf("writegate-bigheap on a: %d %+v", code, eb)
	}
	for _, f := range []*fixture{a, b} {
		in := settle(f, "WriteGate@2")
		ro := in.Rollout
		if in.Current.Digest != wg || in.Serving != 1 || in.Desired.Number != 1 || ro.State != server.RolloutRefused || ro.By != "warden-b" ||
			ro.Code != server.CodePluginRejected || !strings.Contains(ro.Reason, "an instance of writegate@1.3.0 holds ") ||
			!strings.HasSuffix(ro.Reason, " bytes of linear memory, over this instance's whole plugin instance budget of 33554432 bytes: no tenant's call could start one") {
			t.Fatalf("after b refused writegate-bigheap: serving %s (%d), rollout %+v", in.Current.Digest, in.Serving, ro)
		}
		if len(in.Generations) != 1 {
			t.Fatalf("generations served: %+v", in.Generations)
		}
	}
}
