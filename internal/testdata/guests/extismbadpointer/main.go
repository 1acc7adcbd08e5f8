//go:build wasip1

// Command extismbadpointer is an extism-PDK guard that hands the host an
// offset that is not an extism memory block.
package main

import "github.com/extism/go-pdk"

//go:wasmimport extism:host/user warden_rejected
func wardenRejected(code, reason, next uint64)

//go:wasmexport warden_manifest
func manifest() int32 {
	pdk.OutputString(`{"name":"extismbadpointer","version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`)
	return 0
}

//go:wasmexport warden_handle
func handle() int32 {
	wardenRejected(0xfffff000, 0, 0)
	return 0
}

func main() {}
