//go:build wasip1

// Command writepanic passes every call but panics on one whose contract is
// a write (sideEffect WRITE), the tools a guard matters most for.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "writepanic", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			if c.Get("contract.sideEffect").String() == "WRITE" {
				panic("writepanic: no rule for writes")
			}
			c.Pass(nil)
		},
	})
}

func main() {}
