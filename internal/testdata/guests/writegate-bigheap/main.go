//go:build wasip1

// Command writegate-bigheap is a WriteGate generation (1.3.0) that decides
// as the first-party one but keeps 32 MiB of its heap in use from its
// start, so each of its instances holds about 40 MiB of linear memory. An
// instance whose whole plugin instance budget is smaller
// (--plugin-max-instance-bytes) could never start one for a tenant, and
// refuses it; an instance with room serves it.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

// ballast is written through, so that its pages are in use.
var ballast []byte

func init() {
	ballast = make([]byte, 32<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = byte(i)
	}
	guest.Serve(writegate.New(writegate.Options{Version: "1.3.0"}))
}

func main() {}
