//go:build wasip1

// Command firstparty serves every first-party plugin (package plugins'
// list: the seven guards and the control, node and env builtins) from one
// wasm module: one Go runtime and one compilation for every first-party
// slot. The host binds the module to one plugin per slot by its manifest
// name (host.SelectPlugin); each slot keeps instances of its own.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins"
)

func init() {
	ps := make([]guest.Plugin, 0, len(plugins.All))
	for _, p := range plugins.All {
		ps = append(ps, p.Plugin)
	}
	guest.ServeAll(ps...)
}

func main() {}
