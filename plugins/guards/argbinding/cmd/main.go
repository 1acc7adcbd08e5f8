//go:build wasip1

// Command argbinding serves the ArgBinding guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/argbinding"
)

func init() { guest.Serve(argbinding.Plugin) }

func main() {}
