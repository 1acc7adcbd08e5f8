package main

import "syscall"

// machineMemory is the machine's physical memory in bytes (0 if unknown).
func machineMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
