package host

import (
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// schedIdle is Linux's SCHED_IDLE policy: a thread under it runs only when
// no other thread of the machine wants the CPU, and is preempted at once
// when one wakes.
const schedIdle = 5

// lowerPriority puts every thread of this process under SCHED_IDLE, and
// at nice 19 should that be refused, so that a compile worker takes only
// the CPU nothing else wants. On Linux both are a thread's, and a new
// thread inherits its creator's: every thread there now is lowered.
func lowerPriority() {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19)
		return
	}
	var param struct{ priority int32 }
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19)
		_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), schedIdle, uintptr(unsafe.Pointer(&param)))
	}
}
