//go:build wasip1

// Command argcheck serves the argcheck guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/argcheck"
)

func init() { guest.Serve(argcheck.Plugin) }

func main() {}
