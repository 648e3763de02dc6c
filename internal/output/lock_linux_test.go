package output

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A layout whose oci-layout became a named pipe or a link after the
// build checked it is not waited on or followed when its lock is taken:
// flock's open of a pipe waited for good for a writer, and a link's
// target, wherever it was, would have been created and locked.
func TestLockLayoutOpensOnlyAFile(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"pipe", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "is a named pipe"},
		{"link", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "oci-layout")
			c.plant(t, path)
			done := make(chan error, 1)
			go func() {
				lock, err := lockLayout(dir)
				if err == nil {
					lock.Unlock()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
					t.Errorf("lockLayout of a layout whose oci-layout %s: %v", c.want, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("lockLayout waited on the planted oci-layout")
			}
		})
	}
}
