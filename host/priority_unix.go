//go:build unix && !linux

package host

import "syscall"

// lowerPriority gives this process the lowest CPU priority (nice 19), so
// that a compile worker takes only the CPU the serving process leaves.
func lowerPriority() {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19)
}
