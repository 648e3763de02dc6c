//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A named pipe at the path when it is opened (one put where a regular
// file was, mid-build) is refused at once: the open waited for a writer,
// which may never come, and no signal ends an open that waits. So is a
// directory or a device, whose reads are not a file's.
func TestOpenRefusesAllButRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "input.go")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "a named pipe"},
		{link, "a named pipe"},
		{dir, "a directory"},
		{os.DevNull, "a character device"},
	} {
		done := make(chan error, 1)
		go func() {
			f, err := Open(tc.path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var pe *fs.PathError
			if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != tc.path || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("Open(%s): %v; want a PathError for it that is ErrNotRegular and names %s", tc.path, err, tc.kind)
			}
		case <-time.After(10 * time.Second):
			// Let the blocked open go, so that the test ends.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				defer w.Close()
			}
			t.Fatalf("Open(%s) still waits after 10s", tc.path)
		}
	}
}

// A regular file opened is as os.Open leaves one: blocking again (the
// O_NONBLOCK the open took to refuse a pipe is cleared), read-only, and
// closed on exec, so a child the build runs inherits none of its inputs.
func TestOpenLeavesAnOrdinaryDescriptor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		t.Errorf("status flags %#x: O_NONBLOCK still set", fl)
	}
	if fl&unix.O_ACCMODE != unix.O_RDONLY {
		t.Errorf("status flags %#x: not read-only", fl)
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fd&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x: FD_CLOEXEC not set", fd)
	}
	if _, err := f.Write([]byte("y")); err == nil {
		t.Error("write to a file opened read-only succeeded")
	}
}
