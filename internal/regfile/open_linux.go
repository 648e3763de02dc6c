package regfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func open(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		// os.NewFile looks at the descriptor's flags once (it is
		// blocking) and leaves the poller out.
		return os.NewFile(uintptr(fd), path), nil
	}
}
