//go:build wasip1

// Command slowinstance spins for 3 s of clock time in init. It asks for the
// real clock, which the host grants only once the manifest is known: the
// pre-warm start at load sees the fake clock (1 ms a reading) and is quick,
// every later instance takes 3 s to start.
package main

import (
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "slowinstance", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			Capabilities: []abi.Capability{abi.CapClock}},
		Handle: func(c *guest.Call) { c.Pass(nil) },
	})
	start := time.Now()
	for time.Since(start) < 3*time.Second {
	}
}

func main() {}
