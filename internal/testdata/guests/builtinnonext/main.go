//go:build wasip1

// Command builtinnonext is a third-party builtin whose one tool fails
// without a next step: installing it must fail the plugin kit's probes.
package main

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "builtinnonext", Version: "1.0.0", Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{
			{Name: "acme_lookup", Description: "looks a thing up", InputSchema: json.RawMessage(`{"type":"object"}`)},
		}},
		Handle: func(c *guest.Call) { c.Failed(abi.ToolBusinessFailed, "the lookup failed", "", nil) },
	})
}

func main() {}
