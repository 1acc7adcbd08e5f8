//go:build wasip1

// Command unitconv serves the unit converter as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/builtins/unitconv"
)

func init() { guest.Serve(unitconv.Plugin) }

func main() {}
