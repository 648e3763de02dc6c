//go:build unix

package artifact

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A git that exits 0 but leaves a child holding its stderr (ssh's
// ControlPersist master does, started by git's ssh transport) has
// answered: the command's wait for the pipe gives up, and its answer is
// taken, where the build failed on git's success.
func TestCommandAnsweredPastLingeringChild(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	old := commandWaitDelay
	commandWaitDelay = 200 * time.Millisecond
	t.Cleanup(func() { commandWaitDelay = old })
	bin := t.TempDir()
	script := "#!/bin/sh\n" + real + " \"$@\"\nrc=$?\nsleep 5 >&2 &\nexit $rc\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	if _, err := git(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatalf("git init, with a child lingering: %v", err)
	}
	out, err := git(context.Background(), dir, "rev-parse", "--is-inside-work-tree")
	if err != nil || out != "true" {
		t.Fatalf("git rev-parse, with a child lingering: %q, %v", out, err)
	}
	// Its failure stays one.
	if _, err := git(context.Background(), dir, "rev-parse", "--verify", "nosuchref"); err == nil {
		t.Error("a failing git, with a child lingering, was taken as an answer")
	}
}
