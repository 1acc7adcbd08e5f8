//go:build wasip1

// Command writegate serves the WriteGate guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

func init() { guest.Serve(writegate.Plugin) }

func main() {}
