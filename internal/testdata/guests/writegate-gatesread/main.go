//go:build wasip1

// Command writegate-gatesread is a changed generation of the first-party
// WriteGate (version 1.1.0) that also gates the read tool search_articles:
// its calls need approval as a write's do. The hot-swap tests swap it in
// under load.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

func init() {
	guest.Serve(writegate.New(writegate.Options{Version: "1.1.0", GateReads: []string{"search_articles"}}))
}

func main() {}
