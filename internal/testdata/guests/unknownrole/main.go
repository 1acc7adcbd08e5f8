//go:build wasip1

// Command unknownrole declares a role the host does not know ("policy").
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "unknownrole", Version: "1.0.0", Role: abi.Role("policy"), Phases: []abi.Phase{abi.PhaseBefore}},
		Handle:   func(c *guest.Call) { c.Pass(nil) },
	})
}

func main() {}
