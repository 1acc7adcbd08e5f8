//go:build wasip1

// Command sysinfo reads the clock, environment and randomness without a grant; it reports what it got.
package main

import (
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	mrand "math/rand/v2"
	"os"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "sysinfo", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			var rnd [8]byte
			_, _ = crand.Read(rnd[:])
			var hostRnd [8]byte
			c.Random(hostRnd[:])
			out, _ := json.Marshal(map[string]any{
				"now":     time.Now().UnixNano(),
				"hostNow": c.Now().UnixNano(),
				"env":     os.Environ(),
				"args":    os.Args,
				"crand":   hex.EncodeToString(rnd[:]),
				"mrand":   mrand.Int64(),
				"hostRnd": hex.EncodeToString(hostRnd[:]),
			})
			c.Success("read", out)
		},
	})
}

func main() {}
