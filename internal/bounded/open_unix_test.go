//go:build unix

package bounded

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// namedPipe makes a named pipe in a directory of the test's own.
func namedPipe(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return fifo
}

// The descriptor is read-only, non-blocking and closed on exec, and a
// named pipe with no writer opens at once (a blocking open would hang
// the test); a path that is not there is a PathError naming it.
func TestOpenNonblocking(t *testing.T) {
	fifo := namedPipe(t)
	fd, err := OpenNonblocking(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_ACCMODE != unix.O_RDONLY || fl&unix.O_NONBLOCK == 0 {
		t.Errorf("status flags %#x, want read-only and non-blocking", fl)
	}
	fdfl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fdfl&unix.FD_CLOEXEC == 0 {
		t.Error("the descriptor is not closed on exec")
	}

	missing := filepath.Join(t.TempDir(), "missing")
	var pe *fs.PathError
	if _, err := OpenNonblocking(missing); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != missing || pe.Op != "open" {
		t.Errorf("OpenNonblocking(%s) = %v, want an open PathError for it that is ErrNotExist", missing, err)
	}
}

// Open of a named pipe reads what its writer writes, waiting for it in
// the poller, and one that nothing wrote to reads as empty and
// Unwritten.
func TestOpenNamedPipe(t *testing.T) {
	fifo := namedPipe(t)
	f, err := Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || len(b) != 0 || Unwritten(f) != ErrUnwritten {
		t.Errorf("unwritten pipe: read %q, %v; Unwritten %v", b, err, Unwritten(f))
	}
	f.Close()

	f, err = Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write([]byte("written"))
		w.Close()
	}()
	if b, err := io.ReadAll(f); err != nil || string(b) != "written" {
		t.Errorf("written pipe: read %q, %v", b, err)
	}
}
