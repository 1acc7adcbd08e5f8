//go:build wasip1

// Command argpolicy serves the ArgPolicy guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/argpolicy"
)

func init() { guest.Serve(argpolicy.Plugin) }

func main() {}
