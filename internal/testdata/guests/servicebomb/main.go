//go:build wasip1

// Command servicebomb hands the digest primitive a path of 1 MiB.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "servicebomb", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			_ = c.Digest(strings.Repeat("a", 1<<20))
			c.Pass(nil)
		},
	})
}

func main() {}
