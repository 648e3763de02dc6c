package bounded

import (
	"errors"
	"os/exec"
)

// Answered is err, what cmd's Run or Wait gave, but nil when cmd exited 0
// and Wait failed only because a child it left (an agent, a wrapper's
// helper started in the background) still held its output open past
// cmd.WaitDelay. The command has answered: what it wrote before it exited
// is in its Output, and the shell, go build and docker all take that
// answer, waiting on the child; the bounded wait pallet sets is to free
// the build from such a child, not to refuse the answer.
func Answered(cmd *exec.Cmd, err error) error {
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		return nil
	}
	return err
}
