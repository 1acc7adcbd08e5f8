//go:build wasip1

// Command extism-guard is a Warden guard written with the extism Go PDK and
// nothing of Warden's own Go packages: it speaks the Warden-over-extism ABI
// (see host/extism.go) directly. It rejects a call whose "amount" argument is
// over the configured maxAmount, and passes every other call.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o extism-guard.wasm ./examples/extism-guard/cmd
package main

import (
	"encoding/json"
	"fmt"

	"github.com/extism/go-pdk"
)

// Results go to the host through extism:host/user; every argument is the
// offset of an extism memory block, 0 for an empty string.

//go:wasmimport extism:host/user warden_pass
func wardenPass(args, facts uint64)

//go:wasmimport extism:host/user warden_rejected
func wardenRejected(code, reason, next uint64)

//go:wasmimport extism:host/user warden_log
func wardenLog(msg uint64)

// block copies s into a new extism memory block.
func block(s string) uint64 {
	if s == "" {
		return 0
	}
	m := pdk.AllocateString(s)
	return m.Offset()
}

const manifestJSON = `{
  "name": "amount-limit",
  "version": "1.0.0",
  "abi": 1,
  "role": "guard",
  "phases": ["before"],
  "description": "rejects an amount over the configured maximum",
  "configSchema": {"type": "object", "properties": {"maxAmount": {"type": "number"}}}
}`

//go:wasmexport warden_manifest
func manifest() int32 {
	pdk.OutputString(manifestJSON)
	return 0
}

// request is the part of the envelope this guard reads.
type request struct {
	Tool string `json:"tool"`
	Args struct {
		Amount *float64 `json:"amount"`
	} `json:"args"`
	Config struct {
		MaxAmount *float64 `json:"maxAmount"`
	} `json:"config"`
}

//go:wasmexport warden_handle
func handle() int32 {
	var req request
	if err := json.Unmarshal(pdk.Input(), &req); err != nil {
		// Arguments that are not JSON are ArgPolicy's business, not ours.
		wardenPass(0, 0)
		return 0
	}
	a, limit := req.Args.Amount, req.Config.MaxAmount
	if a != nil && limit != nil && *a > *limit {
		wardenLog(block(fmt.Sprintf("%s: amount %g over %g", req.Tool, *a, *limit)))
		wardenRejected(block("ARG_REJECTED"),
			block(fmt.Sprintf("amount %g is over the limit of %g", *a, *limit)),
			block(fmt.Sprintf("ask the user to confirm a smaller amount (at most %g)", *limit)))
		return 0
	}
	wardenPass(0, 0)
	return 0
}

func main() {}
