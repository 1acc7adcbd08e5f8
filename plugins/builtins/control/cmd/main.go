//go:build wasip1

// Command control serves the node-control builtins as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

func init() { guest.Serve(control.Plugin) }

func main() {}
