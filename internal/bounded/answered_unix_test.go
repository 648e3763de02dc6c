//go:build unix

package bounded

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command that exits, leaving a child of its own holding its stdout,
// has answered when it exited 0, and has failed when it did not: the
// child's hold is forgiven, the exit status never is.
func TestAnswered(t *testing.T) {
	for _, tc := range []struct {
		exit   int
		wantOK bool
	}{
		{0, true},
		{3, false},
	} {
		pidfile := filepath.Join(t.TempDir(), "pid")
		cmd := exec.Command("sh", "-c", `echo answer; sleep 30 & echo $! > "$PIDFILE"; exit `+strconv.Itoa(tc.exit))
		cmd.Env = append(os.Environ(), "PIDFILE="+pidfile)
		out := &Output{Max: 1 << 10}
		cmd.Stdout = out
		cmd.WaitDelay = 100 * time.Millisecond
		runErr := cmd.Run()
		if data, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := Answered(cmd, runErr)
		switch {
		case tc.wantOK && !errors.Is(runErr, exec.ErrWaitDelay):
			t.Fatalf("exit %d: Run = %v, want exec.ErrWaitDelay for the test to mean anything", tc.exit, runErr)
		case tc.wantOK && err != nil:
			t.Errorf("exit 0, child holding stdout: Answered = %v, want nil", err)
		case !tc.wantOK && err == nil:
			t.Errorf("exit %d: Answered = nil, want the command's failure (Run said %v)", tc.exit, runErr)
		}
		if tc.wantOK && strings.TrimSpace(string(out.Bytes())) != "answer" {
			t.Errorf("exit 0: output %q, want the answer", out.Bytes())
		}
	}
}

// An error that is not the wait for pipes is kept, and so is that error
// of a command that never ran to an exit.
func TestAnsweredKeepsOtherErrors(t *testing.T) {
	boom := errors.New("boom")
	if err := Answered(exec.Command("true"), boom); err != boom {
		t.Errorf("Answered(boom) = %v", err)
	}
	if err := Answered(exec.Command("true"), exec.ErrWaitDelay); !errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("Answered of an unstarted command's ErrWaitDelay = %v, want it kept", err)
	}
	if err := Answered(exec.Command("true"), nil); err != nil {
		t.Errorf("Answered(nil) = %v", err)
	}
}
