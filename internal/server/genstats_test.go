package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestGenerationCounts: instances sharing a database write the counters
// of the generations they served, and the slot's history sums them: a
// retired generation's calls stay after the swap, an instance restarted
// under its name goes on from what it wrote, and the probes are counted
// apart from the calls.
func TestGenerationCounts(t *testing.T) {
	t.Parallel()
	for _, d := range []sqlstore.Dialect{sqlstore.SQLite, sqlstore.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := openDB(t, d)
			ctx := context.Background()
			instance := func(name string) *fixture {
				return buildFixture(t, fixtureSetup{options: func(o *server.Options) { o.Generations, o.Instance = db, name }})
			}
			slot := func(f *fixture) server.SlotInfo {
				t.Helper()
				if err := f.srv.SyncSlots(ctx); err != nil {
					t.Fatal(err)
				}
				var in server.SlotInfo
				if code, eb := f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &in); code != 200 {
					t.Fatalf("slot: %d %+v", code, eb)
				}
				return in
			}
			call := func(f *fixture, n int) {
				t.Helper()
				slot(f)
				sl := f.srv.Slots()["Good"]
				for range n {
					if v := sl.Guard(ctx, "acme", &abi.Request{Phase: abi.PhaseBefore, Tool: "query_space", Args: json.RawMessage(`{}`)}); v.Observation != nil &&
						v.Observation.Outcome == abi.OutcomeFailed {
						t.Fatalf("guard call failed: %+v", v.Observation)
					}
				}
			}
			a, b := instance("warden-a"), instance("warden-b")
			if code, eb := a.do(t, "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "good", ""), nil); code != 201 {
				t.Fatalf("install: %d %+v", code, eb)
			}
			call(a, 3)
			call(b, 2)
			if code, eb := a.do(t, "PUT", "/admin/v1/slots/Good", keyAdmin, install(t, "goodv2", ""), nil); code != 200 {
				t.Fatalf("swap: %d %+v", code, eb)
			}
			call(a, 1)
			call(b, 0) // b swaps too: its generation 1 retires
			a.srv.Close()
			a = instance("warden-a") // restarted, under its name
			call(a, 4)
			// An instance writes its counters every CountsFlush, at a
			// swap, at Close, and when its slots are read.
			slot(a)

			in := slot(b)
			good, goodv2 := host.Digest(testdata.Bytes(t, "good")), host.Digest(testdata.Bytes(t, "goodv2"))
			if len(in.Kept) != 2 || in.Kept[0].Digest != good || in.Kept[1].Digest != goodv2 {
				t.Fatalf("kept: %+v", in.Kept)
			}
			both := []string{"warden-a", "warden-b"}
			for i, want := range []uint64{3 + 2, 1 + 4} {
				c := in.Kept[i].Counts
				if c == nil {
					t.Fatalf("generation %d: no counts", i+1)
				}
				var outcomes uint64
				for _, n := range c.Outcomes {
					outcomes += n
				}
				if c.Calls != want || outcomes != want || sum(c.Latency.Counts) != want || len(c.Latency.Counts) != len(host.LatencyBuckets)+1 ||
					c.LatencyMsTotal <= 0 || c.P50Ms == nil || c.P99Ms == nil || *c.P50Ms > *c.P99Ms || c.Probes == 0 || !slices.Equal(c.Instances, both) {
					t.Fatalf("generation %d: %+v, want %d calls by both instances", i+1, c, want)
				}
			}
			// Each instance answers the same sums.
			if again := slot(a); again.Kept[0].Counts.Calls != 5 || again.Kept[1].Counts.Calls != 5 {
				t.Fatalf("through the restarted instance: %+v / %+v", again.Kept[0].Counts, again.Kept[1].Counts)
			}
		})
	}
}
