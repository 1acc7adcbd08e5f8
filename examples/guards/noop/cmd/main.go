//go:build wasip1

// Command noop serves the noop guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/noop"
)

func init() { guest.Serve(noop.Plugin) }

func main() {}
