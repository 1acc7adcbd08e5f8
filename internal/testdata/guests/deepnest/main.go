//go:build wasip1

// Command deepnest scans the arguments with a fixed 64-level stack, so
// arguments nested deeper make it index past the stack and trap.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "deepnest", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			var stack [64]byte
			depth := 0
			for _, b := range []byte(c.Args().Raw) {
				switch b {
				case '{', '[':
					stack[depth] = b
					depth++
				case '}', ']':
					depth--
				}
			}
			c.Pass(nil)
		},
	})
}

func main() {}
