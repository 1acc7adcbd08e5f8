// Package plugins lists Warden's first-party plugins once: the seven guards
// of every chain (plugins/guards/*) and the three builtin tools
// (plugins/builtins/*). Whatever runs, builds, loads or checks the
// first-party set takes it from here.
package plugins

import (
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/builtins/control"
	"github.com/agentwarden/warden/plugins/builtins/env"
	"github.com/agentwarden/warden/plugins/builtins/node"
	"github.com/agentwarden/warden/plugins/guards/argbinding"
	"github.com/agentwarden/warden/plugins/guards/argpolicy"
	"github.com/agentwarden/warden/plugins/guards/evidence"
	"github.com/agentwarden/warden/plugins/guards/fingerprint"
	"github.com/agentwarden/warden/plugins/guards/paramcontract"
	"github.com/agentwarden/warden/plugins/guards/responsecontract"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

// Plugin is one first-party plugin.
type Plugin struct {
	// Name is the slot it serves: a guard's chain position name
	// (ArgPolicy, …), a builtin's slot name (control, node, env).
	Name string
	// Role is guard or builtin.
	Role abi.Role
	// Before and After are a guard's places in the chain's before and
	// after phases (contract.FirstPartyGuards), -1 where it does not run;
	// both -1 for a builtin.
	Before, After int
	// File names its module, File+".wasm", as `make plugins` names it, and
	// its optional sidecar File+".json".
	File string
	// Main is the directory of the main package that builds its wasm
	// module, relative to the module root ("plugins/guards/argpolicy/cmd").
	Main string
	// Plugin is the plugin itself, to run in-process.
	Plugin guest.Plugin
}

// The plugins by slot name; All puts them in order.
var (
	guards = map[string]guest.Plugin{
		"ArgPolicy": argpolicy.Plugin, "ArgBinding": argbinding.Plugin, "ParamContract": paramcontract.Plugin,
		"Fingerprint": fingerprint.Plugin, "WriteGate": writegate.Plugin, "ResponseContract": responsecontract.Plugin,
		"Evidence": evidence.Plugin,
	}
	builtins = []struct {
		name string
		p    guest.Plugin
	}{{"control", control.Plugin}, {"node", node.Plugin}, {"env", env.Plugin}}
)

// All are the first-party plugins: the guards in chain order (the before
// phase's, then the after phase's not already named), then the builtins in
// the order sessions list them.
var All = func() []Plugin {
	var out []Plugin
	before, after := contract.FirstPartyGuards[contract.PhaseBefore], contract.FirstPartyGuards[contract.PhaseAfter]
	for _, n := range append(slices.Clone(before), after...) {
		if slices.ContainsFunc(out, func(p Plugin) bool { return p.Name == n }) {
			continue
		}
		file := strings.ToLower(n)
		out = append(out, Plugin{Name: n, Role: abi.RoleGuard, Before: slices.Index(before, n), After: slices.Index(after, n),
			File: file, Main: "plugins/guards/" + file + "/cmd", Plugin: guards[n]})
	}
	for _, b := range builtins {
		out = append(out, Plugin{Name: b.name, Role: abi.RoleBuiltin, Before: -1, After: -1,
			File: b.name, Main: "plugins/builtins/" + b.name + "/cmd", Plugin: b.p})
	}
	return out
}()

// Guards are the first-party guards, in chain order.
func Guards() []Plugin { return ofRole(abi.RoleGuard) }

// Builtins are the first-party builtins, in the order sessions list them.
func Builtins() []Plugin { return ofRole(abi.RoleBuiltin) }

func ofRole(r abi.Role) []Plugin {
	var out []Plugin
	for _, p := range All {
		if p.Role == r {
			out = append(out, p)
		}
	}
	return out
}

// Lookup returns the first-party plugin serving the slot name.
func Lookup(name string) (Plugin, bool) {
	i := slices.IndexFunc(All, func(p Plugin) bool { return p.Name == name })
	if i < 0 {
		return Plugin{}, false
	}
	return All[i], true
}
