//go:build unix

package artifact

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A commit's shared fetch given up at the bound while git works locally
// (here its tree's size, asked of a git that hangs on it) is said as a
// timeout naming the repository and commit to every platform that
// checks the commit out, not only to the first: the others were handed
// the killed command's own error, which said neither.
func TestSharedCheckoutTimeoutSaidToEach(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	_, g := oneCommitRepo(t)

	bin := t.TempDir()
	script := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = ls-tree ] && exec sleep 60; done\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	f := New()
	f.Log = t.Logf
	f.Limits.DownloadTimeout = time.Second
	if err := f.ShareCheckouts(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	want := "the git work of " + g.Repo + " at " + g.Commit + " may take in all"
	for _, platform := range []string{"first", "second"} {
		err := f.checkout(context.Background(), g, filepath.Join(t.TempDir(), "src"))
		if err == nil || !errors.As(err, new(*gitTimeoutError)) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s checkout: %v, want a timeout saying %q", platform, err, want)
		}
	}
}
