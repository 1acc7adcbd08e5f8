package scenario_test

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/testdata"
)

// LoadPlugins names every first-party plugin once, in chain order then the
// builtins; as wasm, each with its generation and the digest of the module
// it runs, and the same manifest as its native build.
func TestLoadPlugins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	native, err := scenario.LoadPlugins(ctx, options(t, true))
	if err != nil {
		t.Fatal(err)
	}
	o := options(t, false)
	wasm, err := scenario.LoadPlugins(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"ArgPolicy", "ArgBinding", "ParamContract", "Fingerprint", "WriteGate", "ResponseContract", "Evidence", "control", "node", "env"}
	files := []string{"argpolicy", "argbinding", "paramcontract", "fingerprint", "writegate", "responsecontract", "evidence", "control", "node", "env"}
	var got []string
	for _, p := range native {
		got = append(got, p.Plugin)
	}
	if !slices.Equal(got, names) || len(wasm) != len(names) {
		t.Fatalf("native plugins %v, %d wasm; want %v", got, len(wasm), names)
	}
	nativeLine := regexp.MustCompile(`^plugin [A-Za-z]+ [a-z.-]+@\d+\.\d+\.\d+ \(native\)$`)
	wasmLine := regexp.MustCompile(`^plugin [A-Za-z]+ gen 1 sha256:[0-9a-f]{12}… [a-z.-]+@\d+\.\d+\.\d+ \(wasm\)$`)
	for i, n := range native {
		w := wasm[i]
		if n.Kind != scenario.KindPlugin || n.Runtime != "native" || n.Generation != 0 || n.Digest != "" || !nativeLine.MatchString(n.String()) {
			t.Errorf("native %d: %+v %q", i, n, n.String())
		}
		want := scenario.PluginInfo{Kind: scenario.KindPlugin, Plugin: names[i], Ref: n.Ref, Runtime: "wasm", Generation: 1,
			Digest: "sha256:" + host.Digest(o.Plugins.Modules[files[i]]), Source: string(o.Plugins.Origin),
			Module: "sha256:" + host.Digest(o.Plugins.Shared)}
		if w != want {
			t.Errorf("wasm %d: %+v, want %+v", i, w, want)
		}
		if !wasmLine.MatchString(w.String()) {
			t.Errorf("wasm %d: line %q", i, w.String())
		}
	}
	// One module serves them all, bound to each slot's plugin: a digest
	// per slot, one module's digest under them.
	digests := map[string]bool{}
	for i := range wasm {
		b := o.Plugins.Modules[files[i]]
		digests[wasm[i].Digest] = true
		if o.Plugins.Shared == nil || host.ModuleDigest(b) != host.Digest(o.Plugins.Shared) {
			t.Errorf("%s's module is not bound from the first-party module", names[i])
		}
	}
	if len(digests) != len(names) {
		t.Errorf("%d digests for %d slots", len(digests), len(names))
	}
	// Loaded once per process: a second load is the same generation.
	again, err := scenario.LoadPlugins(ctx, o)
	if err != nil || !slices.Equal(again, wasm) {
		t.Fatalf("second load: %v %+v", err, again)
	}
}

// A module given in a first-party plugin's place (warden run --plugins)
// gets that plugin's capabilities and no more: a WriteGate asking for
// effect.node and the rest is refused, naming what it asked for.
func TestLoadPluginsGrant(t *testing.T) {
	t.Parallel()
	o := options(t, false)
	set := *o.Plugins
	set.Modules = maps.Clone(set.Modules)
	set.Modules["writegate"] = testdata.Bytes(t, "writegate-escalate")
	o.Plugins = &set
	_, err := scenario.LoadPlugins(context.Background(), o)
	const want = "scenario: guard WriteGate: host: slot WriteGate: candidate: host: load writegate.wasm: plugin asks for capabilities it is not granted: " +
		"writegate@1.2.0 asks for state.ledger, state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random; " +
		"it may have state.ledger, state.approval, effect.ledger (not granted: effect.node, effect.output, state.conversation, clock, random)"
	if err == nil || err.Error() != want || !errors.Is(err, host.ErrNotGranted) {
		t.Fatalf("LoadPlugins = %v\nwant %s", err, want)
	}
}
