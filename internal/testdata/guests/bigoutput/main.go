//go:build wasip1

// Command bigoutput reports a result over the output limit.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "bigoutput", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Success("big", []byte(`"`+strings.Repeat("x", 2<<20)+`"`))
		},
	})
}

func main() {}
