//go:build wasip1

// Command trapguard is a tenant guard that panics on the calls of the tool
// its config names, and passes every other call: a guard that fails in
// production, for the failure policies (closed, open, shadow).
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "trapguard", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			ConfigSchema: []byte(`{"type":"object","additionalProperties":false,"required":["tool"],"properties":{"tool":{"type":"string"}}}`)},
		Handle: func(c *guest.Call) {
			if c.Tool() == c.Get("config.tool").String() {
				panic("trapguard: boom on " + c.Tool())
			}
			c.Pass(nil)
		},
	})
}

func main() {}
