//go:build wasip1

// Command responsecontract serves the ResponseContract guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/responsecontract"
)

func init() { guest.Serve(responsecontract.Plugin) }

func main() {}
