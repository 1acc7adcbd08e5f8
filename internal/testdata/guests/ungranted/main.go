//go:build wasip1

// Command ungranted emits an effect its manifest was not granted.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "ungranted", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Effect(abi.EffectLedgerReserve, []byte(`{"key":"k"}`))
			c.Pass(nil)
		},
	})
}

func main() {}
