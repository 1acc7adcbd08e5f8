//go:build wasip1

// Command multi serves two guards from one module (guest.ServeAll), as the
// first-party module serves every first-party plugin: alpha rejects every
// call, counting its calls in a package variable (and saying how many when
// its arguments ask, {"count":true}), and beta passes, saying what the same
// variable holds in its own instance (always 0: an instance serves one
// plugin and has memory of its own).
package main

import (
	"strconv"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

var calls int

func init() {
	guest.ServeAll(
		guest.Plugin{
			Manifest: abi.Manifest{Name: "alpha", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
			Handle: func(c *guest.Call) {
				calls++
				if c.Args().Get("count").Bool() {
					c.Rejected(abi.ArgRejected, "alpha call "+strconv.Itoa(calls), "ask beta")
					return
				}
				c.Rejected(abi.ArgRejected, "alpha rejects", "ask beta")
			},
		},
		guest.Plugin{
			Manifest: abi.Manifest{Name: "beta", Version: "2.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
			Handle: func(c *guest.Call) {
				c.Pass([]byte(`{"calls":` + strconv.Itoa(calls) + `}`))
			},
		},
	)
}

func main() {}
