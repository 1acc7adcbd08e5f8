//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// isolate puts the child in its own process group so that killGroup reaches
// the grandchildren a launcher such as npx starts.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
