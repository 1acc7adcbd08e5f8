package server_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

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

// TestFleetSlots: servers sharing one store serve the generation installed
// on any of them once they synchronise, a rollback through one to a kept
// generation reaches the others, a candidate the installing server refuses
// reaches none, one refused by another server is reported in the slot's
// rollout status, and a server started afterwards serves the desired
// generation.
func TestFleetSlots(t *testing.T) {
	slots := store.NewMemorySlots()
	shared := sharedStore{server.NewMemoryGenerations(), slots, store.NewMemorySlotCounts(slots)}
	good := host.Digest(testdata.Bytes(t, "good"))
	goodv2 := host.Digest(testdata.Bytes(t, "goodv2"))
	var refuseV2 atomic.Bool
	instance := func(name string, test host.SelfTest) *fixture {
		return buildFixture(t, fixtureSetup{options: func(o *server.Options) {
			o.Generations, o.Instance, o.SelfTest = shared, name, test
		}})
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
		if err := f.srv.SyncSlots(context.Background()); err != nil {
			t.Fatal(err)
		}
		var in server.SlotInfo
		if code, eb := f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &in); code != 200 {
			t.Fatalf("slot: %d %+v", code, eb)
		}
		return in
	}
	serves := func(f *fixture, digest string, number uint64) {
		t.Helper()
		in := slot(f)
		if in.Current.Digest != digest || in.Serving != number || in.Desired == nil {
			t.Fatalf("serves %s (store generation %d), want %s (%d)", in.Current.Digest, in.Serving, digest, number)
		}
	}
	steps := []struct {
		name         string
		on           *fixture
		method, path string
		body         string
		status       int
		code         string
		digest       string // served by a and b afterwards
		number       uint64 // the desired generation afterwards
	}{
		{"install on a", a, "PUT", "/admin/v1/slots/Good", install(t, "good", ""), 201, "", good, 1},
		{"swap on a", a, "PUT", "/admin/v1/slots/Good", install(t, "goodv2", ""), 200, "", goodv2, 2},
		{"the same again", a, "PUT", "/admin/v1/slots/Good", install(t, "goodv2", ""), 200, "", goodv2, 2},
		{"rollback to 1 through b", b, "POST", "/admin/v1/slots/Good/rollback?to=1", "", 200, "", good, 3},
		{"refused on a", a, "PUT", "/admin/v1/slots/Good", install(t, "noresult", ""), 422, server.CodePluginRejected, good, 3},
		{"rollback to a generation not kept", b, "POST", "/admin/v1/slots/Good/rollback?to=99", "", 404, server.CodeGenerationNotFound, good, 3},
		{"rollback to nothing", b, "POST", "/admin/v1/slots/Good/rollback?to=x", "", 400, server.CodeInvalidRequest, good, 3},
		{"rollback to two", b, "POST", "/admin/v1/slots/Good/rollback?to=1&to=2", "", 400, server.CodeInvalidRequest, good, 3},
		{"rollback with an unknown parameter", b, "POST", "/admin/v1/slots/Good/rollback?from=1", "", 400, server.CodeUnknownField, good, 3},
		{"rollback to the previous one", a, "POST", "/admin/v1/slots/Good/rollback", "", 200, "", goodv2, 4},
	}
	for _, st := range steps {
		code, eb := st.on.do(t, st.method, st.path, keyAdmin, st.body, nil)
		if code != st.status || eb.Error.Code != st.code {
			t.Fatalf("%s: %d %s (%s), want %d %s", st.name, code, eb.Error.Code, eb.Error.Message, st.status, st.code)
		}
		serves(a, st.digest, st.number)
		serves(b, st.digest, st.number)
	}
	in := slot(a)
	if len(in.Kept) != 4 || in.Kept[2].Origin != store.SlotOriginRollback || in.Kept[2].From != 1 || in.Kept[2].Instance != "warden-b" ||
		in.Kept[3].From != 2 || len(in.Instances) != 2 || in.Instances[0].Instance != "warden-a" || in.Instances[1].Serving != 4 {
		t.Fatalf("kept %+v\ninstances %+v", in.Kept, in.Instances)
	}
	if n := len(in.Refused); n != 1 || in.Refused[0].Instance != "warden-a" || !strings.Contains(in.Refused[0].Reason, "incompatible") {
		t.Fatalf("refused: %+v", in.Refused)
	}

	// b refuses what a serves: b keeps serving its generation and says
	// why in the rollout status.
	refuseV2.Store(true)
	if code, eb := a.do(t, "POST", "/admin/v1/slots/Good/rollback?to=3", keyAdmin, "", nil); code != 200 {
		t.Fatalf("rollback to 3: %d %+v", code, eb)
	}
	serves(a, good, 5)
	serves(b, good, 5)
	if code, eb := a.do(t, "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "goodv2", ""), nil); code != 200 {
		t.Fatalf("install v2: %d %+v", code, eb)
	}
	serves(a, goodv2, 6)
	in = slot(b)
	if in.Current.Digest != good || in.Serving != 5 || in.Desired.Number != 6 || len(in.Instances) != 2 ||
		in.Instances[1].Instance != "warden-b" || in.Instances[1].Serving != 5 || in.Instances[1].Refused != 6 ||
		!strings.Contains(in.Instances[1].Reason, "refused on warden-b") {
		t.Fatalf("b after refusing 6: serving %s (%d), instances %+v", in.Current.Digest, in.Serving, in.Instances)
	}

	// An instance started afterwards serves the desired generation.
	c := instance("warden-c", nil)
	serves(c, goodv2, 6)
	// Its load check and self-test are counted apart from served calls.
	if st := slot(c).Stats; st.Calls != 0 || st.Pass != 0 || st.Probes == 0 {
		t.Fatalf("c's counters before any call: %+v", st)
	}
}
