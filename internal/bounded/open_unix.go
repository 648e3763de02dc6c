//go:build unix

package bounded

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func open(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		// Non-blocking, a pipe's reads go through the runtime's poller
		// and wait for data there; a regular file ignores the flag.
		return os.NewFile(uintptr(fd), path), nil
	}
}
