//go:build unix

package regfile

import (
	"io/fs"
	"os"

	"github.com/pallet-dev/pallet/internal/bounded"
	"golang.org/x/sys/unix"
)

func open(path string) (*os.File, error) {
	// O_NONBLOCK: a named pipe put where a regular file was opens at
	// once, without a writer, and is refused below; without it the open
	// waits for a writer, perhaps forever, and no signal ends it.
	var fd int
	for {
		var err error
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		break
	}
	// The type is asked of what was opened, not of the path before the
	// open: the path may change between the two.
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: notRegular(bounded.TypeOfStat(uint32(st.Mode)))}
	}
	// os.NewFile looks at the descriptor's flags once: blocking again,
	// it leaves the poller out (which cannot take a regular file).
	if err := setBlocking(fd); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		if err := unix.Fstat(fd, st); err != unix.EINTR {
			return err
		}
	}
}

func setBlocking(fd int) error {
	for {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_RDONLY); err != unix.EINTR {
			return err
		}
	}
}
