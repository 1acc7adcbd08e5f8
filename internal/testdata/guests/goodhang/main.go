//go:build wasip1

// Command goodhang is a new version of the guard good (the same name,
// role and phases) that hangs on a large request: it passes small ones
// as good does and loops forever once the call's arguments pass 64 KiB,
// as the load check's near-input-limit request makes them.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "good", Version: "1.1.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore, abi.PhaseAfter}},
		Handle: func(c *guest.Call) {
			if c.Size(abi.FieldArgs)+c.Size(abi.FieldArgsText) > 64<<10 {
				for {
				}
			}
			c.Pass(nil)
		},
	})
}

func main() {}
