package artifact

import (
	"context"
	"os/exec"
	"time"
)

// command is exec.CommandContext for the tools kinds run, which start
// tools of their own (go build runs compile and link; git runs its
// transport helpers). Cancelling ctx (another artifact failed, Ctrl-C)
// stops the whole process group, not only the process pallet started:
// otherwise the children keep the output pipe open and the build waits
// for an orphaned compile or link to finish.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	stopGroupOnCancel(cmd)
	// A child that escaped the group (it started its own) still cannot
	// hold the build: Wait gives up on its pipes after this.
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
