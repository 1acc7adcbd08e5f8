//go:build wasip1

// Command querystack asks the host to query a path of '!', a million '['
// and "|@pretty": unbounded, gjson recursed once per bracket and overflowed
// the host's Go stack, which kills the process.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "querystack", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Get("!" + strings.Repeat("[", 1<<20) + "|@pretty")
			c.Pass(nil)
		},
	})
}

func main() {}
