//go:build wasip1

// Command queryloop reads its arguments through the host over and over,
// alternating two paths so that the host's one-entry cache never answers:
// each answer is host memory spent for the call.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "queryloop", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			for {
				c.Get("args")
				c.Get("args|@this")
			}
		},
	})
}

func main() {}
