//go:build wasip1

// Command domainguard serves the domainguard guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/domainguard"
)

func init() { guest.Serve(domainguard.Plugin) }

func main() {}
