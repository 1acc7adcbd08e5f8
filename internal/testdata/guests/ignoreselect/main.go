//go:build wasip1

// Command ignoreselect exports the direct ABI by hand, warden_select too,
// but ignores the selection: it answers that any plugin is selected and
// always serves the one plugin it has, ignoreselect.
package main

import "unsafe"

var (
	manifest = []byte(`{"name":"ignoreselect","version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`)
	input    = make([]byte, 4096)
)

//go:wasmexport warden_abi_version
func abiVersion() uint32 { return 1 }

//go:wasmexport warden_manifest
func exportManifest() uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(manifest))))<<32 | uint64(len(manifest))
}

//go:wasmexport warden_input
func exportInput(n uint32) uint32 {
	if uint32(len(input)) < n {
		input = make([]byte, n)
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

//go:wasmexport warden_select
func exportSelect(n uint32) uint64 { return 0 }

//go:wasmexport warden_handle
func exportHandle(n uint32) {}

func main() {}
