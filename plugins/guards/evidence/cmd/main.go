//go:build wasip1

// Command evidence serves the Evidence guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/evidence"
)

func init() { guest.Serve(evidence.Plugin) }

func main() {}
