//go:build wasip1

// Command extismloop is an extism-PDK guard that loops forever in its
// handler.
package main

import "github.com/extism/go-pdk"

//go:wasmexport warden_manifest
func manifest() int32 {
	pdk.OutputString(`{"name":"extismloop","version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`)
	return 0
}

//go:wasmexport warden_handle
func handle() int32 {
	for {
	}
}

func main() {}
