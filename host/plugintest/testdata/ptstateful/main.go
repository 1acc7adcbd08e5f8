//go:build wasip1

// Command ptstateful is a guard for the kit's own tests that breaks the
// statelessness rule: it counts calls and passes only the first one on each
// instance, which the deterministic and concurrent checks must catch.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

var calls int

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "ptstateful", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			calls++
			if calls > 1 {
				c.Rejected(abi.ArgRejected, "只放行第一次调用", "换一个实例再调用")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
