//go:build wasip1

// Command slowstart loops in init, so it never finishes starting.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

var spins int

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "slowstart", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle:   func(c *guest.Call) { c.Pass(nil) },
	})
	for {
		spins++
	}
}

func main() {}
