//go:build wasip1

// Command configured is a guard with a config schema: it needs a limit.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "configured", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			ConfigSchema: []byte(`{"type":"object","additionalProperties":false,"required":["limit"],"properties":{"limit":{"type":"integer","minimum":1}}}`)},
		Handle: func(c *guest.Call) {
			if c.Args().Get("amount").Int() > c.Config().Get("limit").Int() {
				c.Rejected(abi.ArgRejected, "金额超过上限", "降低金额后再调用")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
