//go:build wasip1

// Command schemabomb validates its arguments against the schema it finds in
// args.schema, in a loop: a schema of 10,000 subschemas is too big to cache
// and takes about a second to compile, far past the plugin's deadline.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "schemabomb", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			for {
				c.Validate("args.schema", "args.doc")
				c.Validate("args.schema", "args")
			}
		},
	})
}

func main() {}
