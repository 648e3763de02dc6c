//go:build unix

package artifact

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

func stopGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithPallet(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		// Not once the process is reaped: its pid, and with it the
		// group id, may belong to someone else by then.
		if err := cmd.Process.Signal(syscall.Signal(0)); errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		// The group's id is the leader's pid, as Setpgid made it.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone // the group ended on its own meanwhile
		}
		return err
	}
}
