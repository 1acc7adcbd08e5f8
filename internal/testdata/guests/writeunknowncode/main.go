//go:build wasip1

// Command writeunknowncode passes every call but rejects a write
// (sideEffect WRITE) with a code nobody registered.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "writeunknowncode", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			if c.Get("contract.sideEffect").String() == "WRITE" {
				c.Rejected("DOMAIN_BLOCKED", "the domain is blocked", "ask the user for another domain")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
