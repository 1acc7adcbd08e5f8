//go:build wasip1

// Command unknowncode reports a non-success with an unregistered code.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "unknowncode", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			c.Failed(abi.Code("NOT_A_CODE"), "出错了", "重试", nil)
		},
	})
}

func main() {}
