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

// TypeOfStat is the file type of a stat(2) mode as fs names it (0 for a
// regular file), for the callers that stat with unix, not os.
func TypeOfStat(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
