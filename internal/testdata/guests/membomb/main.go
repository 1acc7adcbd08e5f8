//go:build wasip1

// Command membomb allocates in its handler until it passes the memory cap.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "membomb", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			var keep [][]byte
			for {
				keep = append(keep, make([]byte, 1<<20))
				keep[len(keep)-1][0] = 1
			}
		},
	})
}

func main() {}
