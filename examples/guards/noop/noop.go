// Package noop is the smallest possible guard: it passes every call. It
// measures the fixed cost of one plugin call.
package noop

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin passes every call.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "noop", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "passes every call",
		Phases:      []abi.Phase{abi.PhaseBefore},
	},
	Handle: func(c *guest.Call) { c.Pass(nil) },
}
