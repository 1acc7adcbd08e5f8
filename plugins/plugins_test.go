package plugins_test

import (
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins"
)

// The list: the guards in chain order (each once), then the builtins; each
// entry's role, phases, places and files agree with its plugin.
func TestAll(t *testing.T) {
	t.Parallel()
	var names []string
	for _, p := range plugins.All {
		names = append(names, p.Name)
	}
	want := []string{"ArgPolicy", "ArgBinding", "ParamContract", "Fingerprint", "WriteGate", "ResponseContract", "Evidence",
		"control", "node", "env"}
	if !slices.Equal(names, want) {
		t.Fatalf("All %v, want %v", names, want)
	}
	for _, phase := range []contract.GuardPhase{contract.PhaseBefore, contract.PhaseAfter} {
		for i, n := range contract.FirstPartyGuards[phase] {
			p, ok := plugins.Lookup(n)
			if place := map[contract.GuardPhase]int{contract.PhaseBefore: p.Before, contract.PhaseAfter: p.After}[phase]; !ok || place != i {
				t.Errorf("%s: %s place %d, want %d", n, phase, place, i)
			}
			if !slices.Contains(p.Plugin.Manifest.Phases, abi.Phase(phase)) {
				t.Errorf("%s runs %s in the chain, its manifest says %v", n, phase, p.Plugin.Manifest.Phases)
			}
		}
	}
	for _, p := range plugins.All {
		if p.Role != p.Plugin.Manifest.Role {
			t.Errorf("%s: role %s, manifest %s", p.Name, p.Role, p.Plugin.Manifest.Role)
		}
		dir := map[abi.Role]string{abi.RoleGuard: "guards", abi.RoleBuiltin: "builtins"}[p.Role]
		if p.Main != "plugins/"+dir+"/"+p.File+"/cmd" {
			t.Errorf("%s: main %s, file %s", p.Name, p.Main, p.File)
		}
		if p.Role == abi.RoleBuiltin && (p.Before != -1 || p.After != -1) {
			t.Errorf("builtin %s has chain places %d, %d", p.Name, p.Before, p.After)
		}
	}
	if got := len(plugins.Guards()) + len(plugins.Builtins()); got != len(plugins.All) {
		t.Errorf("%d guards and builtins, %d plugins", got, len(plugins.All))
	}
	if _, ok := plugins.Lookup("Nothing"); ok {
		t.Error("Lookup found Nothing")
	}
}
