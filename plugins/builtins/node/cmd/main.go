//go:build wasip1

// Command node serves the node-data builtins as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/node"
)

func init() { guest.Serve(node.Plugin) }

func main() {}
