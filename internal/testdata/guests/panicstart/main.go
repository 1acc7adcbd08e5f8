//go:build wasip1

// Command panicstart panics in init, before it can serve a call.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "panicstart", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle:   func(c *guest.Call) { c.Pass(nil) },
	})
	panic("broken at start")
}

func main() {}
