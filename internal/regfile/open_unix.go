//go:build unix

package regfile

import (
	"io/fs"
	"os"

	"github.com/pallet-dev/pallet/internal/bounded"
	"golang.org/x/sys/unix"
)

func open(path string) (*os.File, error) {
	// Non-blocking: a named pipe put where a regular file was opens at
	// once, without a writer, and is refused below.
	fd, err := bounded.OpenNonblocking(path)
	if err != nil {
		return nil, err
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
