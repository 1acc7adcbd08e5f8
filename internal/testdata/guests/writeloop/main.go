//go:build wasip1

// Command writeloop runs before and after calls; after a write (sideEffect
// WRITE) it loops forever, and passes everything else.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "writeloop", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore, abi.PhaseAfter}},
		Handle: func(c *guest.Call) {
			if c.Get("phase").String() == "after" && c.Get("contract.sideEffect").String() == "WRITE" {
				for {
				}
			}
			c.Pass(nil)
		},
	})
}

func main() {}
