//go:build wasip1

// Command paramcontract serves the ParamContract guard as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/paramcontract"
)

func init() { guest.Serve(paramcontract.Plugin) }

func main() {}
