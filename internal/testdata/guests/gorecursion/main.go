//go:build wasip1

// Command gorecursion recurses without end in its handler: a Go guest keeps
// its frames on its own stack in linear memory, so it runs out of its memory
// limit.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

//go:noinline
func down(n int) int {
	if n == -1 {
		return 0
	}
	return down(n+1) + 1
}

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "gorecursion", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			down(0)
			c.Pass(nil)
		},
	})
}

func main() {}
