//go:build wasip1

// Command reservedcode answers every call with GUARD_UNAVAILABLE, a code
// only the host may report.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "reservedcode", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Rejected(abi.GuardUnavailable, "守卫不可用", "稍后重试")
		},
	})
}

func main() {}
