//go:build wasip1

// Command capsask is a guard whose manifest asks for capabilities a tenant
// is not granted by default (effect.node, state.conversation): it passes.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "capsask", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			Capabilities: []abi.Capability{abi.CapEffectNode, abi.CapStateConversation}},
		Handle: func(c *guest.Call) { c.Pass(nil) },
	})
}

func main() {}
