//go:build unix

package inspect

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What go-containerregistry reads whole or opens again and again without
// a check (a layout's index.json, a docker archive) is refused when it is
// not a regular file: a named pipe held inspect until killed, and
// index.json linked to /dev/zero read until memory ran out.
func TestNotRegularFilesRefused(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo.tar")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	piped, zero := filepath.Join(tmp, "piped"), filepath.Join(tmp, "zero")
	for _, dir := range []string{piped, zero} {
		writeLayout(t, dir, map[string]any{"latest": image(t, nil)})
		if err := os.Remove(filepath.Join(dir, "index.json")); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(piped, "index.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(zero, "index.json")); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"docker:" + fifo, "oci:" + piped, "oci:" + zero} {
		done := make(chan error, 1)
		go func() {
			_, err := Open(context.Background(), spec)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want it refused", spec, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still reading after 10 s", spec)
		}
	}
}
