//go:build unix

package build

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A mirror travels between machines, and its lock file with it: one that
// is a symlink is not followed (pallet fetch created the file it named,
// wherever that was), nor is a named pipe waited on (it held the fetch
// for good); the fetch fails naming it, and succeeds once it is removed.
func TestMirrorLockThatIsNotAFile(t *testing.T) {
	for _, kind := range []string{"a symbolic link", "a named pipe"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			lock := filepath.Join(dir, ".pallet-fetch.lock")
			outside := filepath.Join(t.TempDir(), "made-by-fetch")
			var err error
			if kind == "a symbolic link" {
				err = os.Symlink(outside, lock)
			} else {
				err = syscall.Mkfifo(lock, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- Mirror(context.Background(), nil, Limits{}, dir, Network{}, Limits{}, t.Logf) }()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the fetch hangs")
			}
			if err == nil || !strings.Contains(err.Error(), lock+" is "+kind+", which pallet neither follows nor opens") {
				t.Errorf("a fetch with %s for its lock: %v, want it named and refused", kind, err)
			}
			if _, err := os.Lstat(outside); !os.IsNotExist(err) {
				t.Errorf("the fetch created the file the link names: %v", err)
			}
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			if err := Mirror(context.Background(), nil, Limits{}, dir, Network{}, Limits{}, t.Logf); err != nil {
				t.Fatal(err)
			}
		})
	}
}
