//go:build wasip1

// Command fieldcheck serves the fieldcheck guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/fieldcheck"
)

func init() { guest.Serve(fieldcheck.Plugin) }

func main() {}
