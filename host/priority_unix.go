//go:build unix

package host

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// lowerPriority gives every thread of this process the lowest CPU
// priority (nice 19), so that a compile worker takes only the CPU the
// serving process leaves. On Linux a nice value is a thread's, and a new
// thread inherits its creator's: every thread there now is lowered.
func lowerPriority() {
	if runtime.GOOS == "linux" {
		if ents, err := os.ReadDir("/proc/self/task"); err == nil {
			for _, e := range ents {
				if tid, err := strconv.Atoi(e.Name()); err == nil {
					_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19)
				}
			}
			return
		}
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19)
}
