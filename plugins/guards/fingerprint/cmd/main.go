//go:build wasip1

// Command fingerprint serves the Fingerprint guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/fingerprint"
)

func init() { guest.Serve(fingerprint.Plugin) }

func main() {}
