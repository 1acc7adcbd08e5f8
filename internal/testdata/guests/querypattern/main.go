//go:build wasip1

// Command querypattern matches the strings of args.list against a '%'
// pattern of many '*': each match backtracks as the string's length to the
// power of the stars, seconds of host CPU for one call.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "querypattern", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Get(`args.list.#(%"` + strings.Repeat("*a", 20) + `*b")#`)
			c.Pass(nil)
		},
	})
}

func main() {}
