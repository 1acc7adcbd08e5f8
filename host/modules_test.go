package host_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// withSection returns the module with a custom section appended: the same
// code under another digest.
func withSection(mod []byte, name string) []byte {
	payload := append(append([]byte{byte(len(name))}, name...), "warden"...)
	return append(append(append([]byte(nil), mod...), 0, byte(len(payload))), payload...)
}

// Plugins of one digest share one compilation; a module no plugin uses any
// more stays compiled, up to KeepIdleModules of them, so that loading it
// again compiles nothing.
func TestCompiledModulesShared(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	ctx := context.Background()
	mod := testdata.Bytes(t, "good")
	loadAs := func(b []byte) *host.Plugin {
		t.Helper()
		p, err := h.Load(ctx, host.Source{Name: "good", Bytes: b}, host.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := func(step string, all, idle int) {
		t.Helper()
		if a, i := host.CompiledModules(h); a != all || i != idle {
			t.Fatalf("%s: %d modules, %d idle; want %d, %d", step, a, i, all, idle)
		}
	}
	a, b := loadAs(mod), loadAs(mod)
	want("two plugins of one module", 1, 0)
	_ = a.Close(ctx)
	want("one closed", 1, 0)
	_ = b.Close(ctx)
	want("both closed", 1, 1)
	c := loadAs(mod)
	want("loaded again", 1, 0)
	if v := c.Guard(ctx, "t", before(`{}`)); !v.Pass {
		t.Fatalf("a plugin on a kept compilation: %+v", v)
	}
	_ = c.Close(ctx)
	// A small hand-written guard, under as many digests as it takes.
	small := testdata.WAT(t, "badpointer")
	for i := range host.KeepIdleModules + 2 {
		_ = loadAs(withSection(small, fmt.Sprintf("v%d", i))).Close(ctx)
	}
	want("more idle modules than kept", host.KeepIdleModules, host.KeepIdleModules)
}
