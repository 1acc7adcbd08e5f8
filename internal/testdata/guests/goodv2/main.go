//go:build wasip1

// Command goodv2 is version 2.0.0 of the good guard (same behaviour), for
// hot-swap tests. Command good is a well-behaved guard: it passes, or rejects when the
// arguments ask it to.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "good", Version: "2.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore, abi.PhaseAfter}},
		Handle: func(c *guest.Call) {
			if c.Args().Get("reject").Bool() {
				c.Rejected(abi.ArgRejected, "参数 [reject] 不允许为 true", "去掉 reject 后再调用")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
