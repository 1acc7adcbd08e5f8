//go:build wasip1

// Command badsignature exports the direct ABI by hand, with warden_handle
// taking an i64 and an f64 and returning an i32 instead of taking an i32.
package main

//go:wasmexport warden_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport warden_manifest
func manifest() int64 { return 0 }

//go:wasmexport warden_input
func input(n int32) int32 { return 0 }

//go:wasmexport warden_handle
func handle(n int64, f float64) int32 { return 0 }

func main() {}
