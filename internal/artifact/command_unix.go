//go:build unix

package artifact

import (
	"os/exec"
	"syscall"
)

func stopGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group's id is the leader's pid, as Setpgid made it.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
