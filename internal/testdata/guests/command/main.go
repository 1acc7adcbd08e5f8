//go:build wasip1

// Command command is a well-behaved guard that tests build as a WASI
// command (testdata.Command: no -buildmode=c-shared), the mistake of an
// author who builds a plugin like any Go program. Built so, it exports
// _start and not _initialize, and the host refuses it at load.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "command", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle:   func(c *guest.Call) { c.Pass(nil) },
	})
}

func main() {}
