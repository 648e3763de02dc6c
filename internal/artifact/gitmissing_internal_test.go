package artifact

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// git missing from PATH is said as the go command's exec error, with
// nothing after it: the error ended in a bare ": ", git having said
// nothing.
func TestGitMissingSaidPlainly(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := git(context.Background(), t.TempDir(), "version")
	if err == nil || !strings.Contains(err.Error(), exec.ErrNotFound.Error()) || strings.HasSuffix(err.Error(), ": ") || strings.HasSuffix(err.Error(), ":") {
		t.Errorf("git with no git on PATH: %q, want the exec error ending the message", err)
	}
}
