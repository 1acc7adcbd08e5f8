package host_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// One module serving two plugins: each slot loads the module bound to its
// plugin by name, and every binding shares one compilation.
func TestSelectPlugin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t)
	multi := testdata.Bytes(t, "multi")
	alpha, err := h.Load(ctx, host.Source{Name: "multi#alpha", Bytes: host.SelectPlugin(multi, "alpha")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer alpha.Close(ctx)
	beta, err := h.Load(ctx, host.Source{Name: "multi#beta", Bytes: host.SelectPlugin(multi, "beta")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer beta.Close(ctx)
	if alpha.Ref() != "alpha@1.0.0" || beta.Ref() != "beta@2.0.0" || alpha.Selected() != "alpha" || beta.Selected() != "beta" {
		t.Fatalf("refs %s %s, selected %q %q", alpha.Ref(), beta.Ref(), alpha.Selected(), beta.Selected())
	}
	// The digests name module and plugin; the module's is shared.
	if alpha.Digest() == beta.Digest() || alpha.ModuleDigest() != beta.ModuleDigest() || alpha.ModuleDigest() != host.Digest(multi) {
		t.Fatalf("digests %s %s, modules %s %s, want the module's %s", alpha.Digest(), beta.Digest(), alpha.ModuleDigest(), beta.ModuleDigest(), host.Digest(multi))
	}
	if got := host.ModuleDigest(host.SelectPlugin(multi, "beta")); got != host.Digest(multi) {
		t.Fatalf("ModuleDigest %s, want %s", got, host.Digest(multi))
	}
	if all, _ := host.CompiledModules(h); all != 1 {
		t.Fatalf("%d compiled modules for two plugins of one module, want 1", all)
	}
	// Rebinding replaces the binding rather than stacking a second one.
	if again := host.SelectPlugin(host.SelectPlugin(multi, "alpha"), "beta"); !bytes.Equal(again, host.SelectPlugin(multi, "beta")) {
		t.Fatal("a module bound twice carries two bindings")
	}
	// Each slot's instances are its own: alpha's calls count in alpha's
	// instance, which beta's instance never sees.
	for i, want := range []string{"alpha call 1", "alpha call 2", "alpha call 3"} {
		v := alpha.Guard(ctx, "acme", before(`{"count":true}`))
		if v.Pass || v.Observation.Code != abi.ArgRejected || !strings.Contains(v.Observation.Message(), want) {
			t.Fatalf("alpha call %d: %+v", i+1, v)
		}
	}
	v := beta.Guard(ctx, "acme", before(`{}`))
	if !v.Pass || string(v.Args) != `{"calls":0}` {
		t.Fatalf("beta: %+v (args %s)", v, v.Args)
	}
	if v := alpha.Guard(ctx, "other", before(`{"count":true}`)); !strings.Contains(v.Observation.Message(), "alpha call 1") {
		t.Fatalf("another tenant's alpha instance: %+v", v)
	}
}

// A binding the module cannot honour is refused at load, naming why.
func TestSelectPluginRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t)
	multi := testdata.Bytes(t, "multi")
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"unknown name", host.SelectPlugin(multi, "gamma"),
			`host: load m: plugin "gamma" not selected: the module serves alpha, beta: module does not serve the selected plugin`},
		{"a module serving one plugin, another name", host.SelectPlugin(testdata.Bytes(t, "good"), "alpha"),
			`host: load m: plugin "alpha" not selected: the module serves good: module does not serve the selected plugin`},
		{"a module without the select export", host.SelectPlugin(testdata.WAT(t, "badpointer"), "badpointer"),
			`host: load m: it serves one plugin (it exports no warden_select), and section warden.plugin names "badpointer": module does not serve the selected plugin`},
		{"a module that ignores the selection", host.SelectPlugin(testdata.Bytes(t, "ignoreselect"), "alpha"),
			`host: load m: module does not serve the selected plugin: plugin "alpha" selected, its manifest names "ignoreselect": the module ignores the selection`},
		{"an empty name", host.SelectPlugin(multi, ""),
			`host: load m: section warden.plugin names a plugin of 0 bytes, want 1 to 64: module does not serve the selected plugin`},
		{"a name no manifest carries", host.SelectPlugin(multi, "al pha"),
			`host: load m: section warden.plugin names plugin "al pha", not printable ASCII: module does not serve the selected plugin`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := h.Load(ctx, host.Source{Name: "m", Bytes: tt.b}, host.Policy{})
			if !errors.Is(err, host.ErrSelect) || err.Error() != tt.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tt.want)
			}
		})
	}
	// The module itself, bound to nothing, selects nothing: it says what
	// it serves.
	const unbound = "host: load m: module does not serve the selected plugin: it serves several plugins (the module serves alpha, beta) and is bound to none; bind it to one (host.SelectPlugin)"
	if _, err := h.Load(ctx, host.Source{Name: "m", Bytes: multi}, host.Policy{}); !errors.Is(err, host.ErrSelect) || err.Error() != unbound {
		t.Fatalf("unbound multi-plugin module: %v", err)
	}
	// A module serving one plugin bound to its own name loads as it is.
	good, err := h.Load(ctx, host.Source{Name: "good", Bytes: host.SelectPlugin(testdata.Bytes(t, "good"), "good")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	_ = good.Close(ctx)
}

// Two slots bound to two plugins of one module: a slot's candidates are
// of its own plugin (beta's binding is refused by alpha's slot), and its
// generations move without the other slot's.
func TestSelectPluginSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t)
	multi := testdata.Bytes(t, "multi")
	bound := host.Source{Name: "multi#alpha", Bytes: host.SelectPlugin(multi, "alpha")}
	sl, err := h.NewSlot(ctx, "Alpha", bound, host.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	other, err := h.NewSlot(ctx, "Beta", host.Source{Name: "multi#beta", Bytes: host.SelectPlugin(multi, "beta")}, host.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Another plugin of the same module is another plugin: refused.
	if _, err := sl.Swap(ctx, host.Source{Name: "multi#beta", Bytes: host.SelectPlugin(multi, "beta")}, host.Policy{}, nil); !errors.Is(err, host.ErrIncompatible) {
		t.Fatalf("swap to beta: %v", err)
	}
	if v := sl.Guard(ctx, "acme", before(`{}`)); v.Pass {
		t.Fatalf("alpha: %+v", v)
	}
	if _, err := sl.Swap(ctx, bound, host.Policy{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := sl.Current(); g.Number != 2 || g.Digest != host.Digest(bound.Bytes) {
		t.Fatalf("generation %+v", g)
	}
	if g, err := sl.Rollback(ctx, nil); err != nil || g.Number != 3 || g.Digest != host.Digest(bound.Bytes) {
		t.Fatalf("rollback: %+v %v", g, err)
	}
	if g := other.Current(); g.Number != 1 || g.Digest != host.Digest(host.SelectPlugin(multi, "beta")) {
		t.Fatalf("beta's slot moved: %+v", g)
	}
}
