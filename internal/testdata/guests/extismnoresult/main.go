//go:build wasip1

// Command extismnoresult is an extism-PDK guard that returns without
// reporting a result.
package main

import "github.com/extism/go-pdk"

//go:wasmexport warden_manifest
func manifest() int32 {
	pdk.OutputString(`{"name":"extismnoresult","version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`)
	return 0
}

//go:wasmexport warden_handle
func handle() int32 {
	_ = pdk.Input()
	return 0
}

func main() {}
