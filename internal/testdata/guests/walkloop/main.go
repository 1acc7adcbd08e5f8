//go:build wasip1

// Command walkloop walks its arguments through the host over and over, with
// a new leaf limit each time so that the host's one-entry cache never
// answers: each walk is host memory spent for the call.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "walkloop", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			for i := 1; ; i++ {
				c.Walk("args", 1+i%2)
			}
		},
	})
}

func main() {}
