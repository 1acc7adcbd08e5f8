//go:build wasip1

// Command writenonext passes every call but rejects a write (sideEffect
// WRITE) without a next step.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "writenonext", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			if c.Get("contract.sideEffect").String() == "WRITE" {
				c.Rejected(abi.ArgRejected, "writes are not allowed", "")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
