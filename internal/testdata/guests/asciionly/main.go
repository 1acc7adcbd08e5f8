//go:build wasip1

// Command asciionly classifies the arguments' bytes with a 128-entry
// table, so the first byte of a non-ASCII character makes it trap.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

var class [128]uint8

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "asciionly", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			n := 0
			for _, b := range []byte(c.Args().Raw) {
				n += int(class[b])
			}
			if n > 0 {
				c.Rejected(abi.ArgRejected, "参数含有控制字符", "去掉控制字符后再调用")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
