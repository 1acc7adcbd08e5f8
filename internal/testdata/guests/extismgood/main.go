//go:build wasip1

// Command extismgood is the good guard written with the extism Go PDK
// against the Warden-over-extism ABI (see host/extism.go): it passes, or
// rejects with ARG_REJECTED when args.reject is true, like guests/good.
package main

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
	"github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user warden_pass
func wardenPass(args, facts uint64)

//go:wasmimport extism:host/user warden_rejected
func wardenRejected(code, reason, next uint64)

// str copies s into extism memory; the empty string is offset 0.
func str(s string) uint64 {
	if s == "" {
		return 0
	}
	m := pdk.AllocateString(s)
	return m.Offset()
}

//go:wasmexport warden_manifest
func manifest() int32 {
	b, err := json.Marshal(abi.Manifest{Name: "extismgood", Version: "1.0.0", ABI: abi.Version,
		Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore, abi.PhaseAfter}})
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.Output(b)
	return 0
}

//go:wasmexport warden_handle
func handle() int32 {
	var req struct {
		Args struct {
			Reject bool `json:"reject"`
		} `json:"args"`
	}
	_ = json.Unmarshal(pdk.Input(), &req)
	if req.Args.Reject {
		wardenRejected(str(string(abi.ArgRejected)), str("参数 [reject] 不允许为 true"), str("去掉 reject 后再调用"))
		return 0
	}
	wardenPass(0, 0)
	return 0
}

func main() {}
