//go:build wasip1

// Command spendlimit serves the spendlimit guard as a wasm plugin.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o spendlimit.wasm ./examples/guards/spendlimit/cmd
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/spendlimit"
)

func init() { guest.Serve(spendlimit.Plugin) }

func main() {}
