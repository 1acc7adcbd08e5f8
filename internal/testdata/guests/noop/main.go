//go:build wasip1

// Command noop is the trivial guard: it passes every call.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "noop", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle:   func(c *guest.Call) { c.Pass(nil) },
	})
}

func main() {}
