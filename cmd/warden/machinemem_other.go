//go:build !linux

package main

// machineMemory is the machine's physical memory in bytes (0: unknown
// here, so the instance budget's default is its floor).
func machineMemory() int64 { return 0 }
