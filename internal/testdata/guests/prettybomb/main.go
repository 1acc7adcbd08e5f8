//go:build wasip1

// Command prettybomb asks for args|@pretty: on deeply nested arguments the
// indented text grows with depth times size (gigabytes of host heap).
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "prettybomb", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Get("args|@pretty")
			c.Pass(nil)
		},
	})
}

func main() {}
