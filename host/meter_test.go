package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestMeteringDifferential loads every fixture guest and every wat fixture
// the way the host ran them before metering (close-on-context-done, no
// metering) and the way it runs them now, and checks each gives the same
// load error or the same verdict. It switches process-wide knobs, so it
// does not run in parallel (parallel tests start after it).
func TestMeteringDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every fixture twice")
	}
	guests, err := os.ReadDir(filepath.Join(testdata.Root(), "internal", "testdata", "guests"))
	if err != nil {
		t.Fatal(err)
	}
	wats, err := filepath.Glob(filepath.Join(testdata.Root(), "internal", "testdata", "wat", "*.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	type fixture struct {
		name string
		bin  []byte
	}
	var fixtures []fixture
	for _, g := range guests {
		if g.IsDir() {
			fixtures = append(fixtures, fixture{g.Name(), testdata.Bytes(t, g.Name())})
		}
	}
	for _, w := range wats {
		name := strings.TrimSuffix(filepath.Base(w), ".wasm")
		fixtures = append(fixtures, fixture{"wat/" + name, testdata.WAT(t, name)})
	}
	pol := host.Policy{Limits: abi.Limits{TimeoutMs: 300, MemoryPages: 512}, LoadTimeout: 2e9}
	outcome := func(h *host.Host, f fixture) string {
		ctx := context.Background()
		pol := pol
		if f.name == "gorecursion" {
			// its call-stack trap must come before the deadline, however
			// fast the guest runs (as in TestHostFunctionBoundary)
			pol.Limits = abi.Limits{TimeoutMs: 5000, MemoryPages: 128}
		}
		p, err := h.Load(ctx, host.Source{Name: f.name, Bytes: f.bin}, pol)
		if err != nil {
			return "load: " + err.Error()
		}
		defer p.Close(ctx)
		v := p.Guard(ctx, "tenant-a", before(`{"s":"abc"}`))
		if v.Observation == nil {
			return fmt.Sprintf("pass %v", v.Pass)
		}
		return fmt.Sprintf("%v %s %s", v.Observation.Outcome, v.Observation.Code, v.Observation.Message())
	}
	run := func(meter, closes bool) []string {
		host.Metering(meter)
		host.CloseOnContextDone(closes)
		defer func() {
			host.Metering(true)
			host.CloseOnContextDone(false)
		}()
		h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close(context.Background())
		out := make([]string, len(fixtures))
		for i, f := range fixtures {
			out[i] = outcome(h, f)
		}
		return out
	}
	was, is := run(false, true), run(true, false)
	for i, f := range fixtures {
		if was[i] != is[i] {
			t.Errorf("%s:\nbefore %s\n   now %s", f.name, was[i], is[i])
		} else {
			t.Logf("%s: %s", f.name, is[i])
		}
	}
}
