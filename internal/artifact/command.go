package artifact

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// Command is exec.CommandContext for the tools pallet runs, which start
// tools of their own (go build runs compile and link; git runs its
// transport helpers). Cancelling ctx (another artifact failed, Ctrl-C)
// stops the whole process group, not only the process pallet started:
// otherwise the children keep the output pipe open and the build waits
// for an orphaned compile or link to finish.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	stopGroupOnCancel(cmd)
	// A child that escaped the group (it started its own: ssh's
	// ControlPersist master, a credential agent) still cannot hold the
	// build: Wait gives up on its pipes after this, and a command that
	// had exited 0 has answered all the same (bounded.Answered, which
	// every caller applies to what Run or Wait says).
	cmd.WaitDelay = commandWaitDelay
	return cmd
}

// commandWaitDelay is Command's WaitDelay (tests shorten it).
var commandWaitDelay = 10 * time.Second

// shellJoin writes args as a POSIX shell would read them back: an
// argument holding a space or a character the shell treats specially is
// single-quoted, so that a command named in an error (go install
// '-ldflags=-s -w' ...) can be pasted to run it again.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=+./,:@%^", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Saying is what a failed command said, after its error: ": " and the
// words, or nothing when it said none (git not found on PATH said
// nothing, and the error ended in a bare ": ").
func Saying(said string) string {
	if said == "" {
		return ""
	}
	return ": " + said
}
