//go:build wasip1

// Command afterbuffer is an after-phase guard that copies the result's data
// into a fixed 64 KiB buffer, and traps on data that does not fit.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

var buf [64 << 10]byte

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "afterbuffer", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter}},
		Handle: func(c *guest.Call) {
			data := c.Result().Get("data").Raw
			if len(data) > len(buf) {
				panic("afterbuffer: the result data does not fit the 64 KiB buffer")
			}
			copy(buf[:], data)
			c.Pass(nil)
		},
	})
}

func main() {}
