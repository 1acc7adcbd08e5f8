package host_test

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used: on a machine
// shared with other work it varies far less than the wall clock.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
