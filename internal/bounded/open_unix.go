//go:build unix

package bounded

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func open(path string) (*os.File, error) {
	fd, err := OpenNonblocking(path)
	if err != nil {
		return nil, err
	}
	// Non-blocking, a pipe's reads go through the runtime's poller and
	// wait for data there; a regular file ignores the flag.
	return os.NewFile(uintptr(fd), path), nil
}

// OpenNonblocking opens the file at path to read, close-on-exec and
// non-blocking, and gives its descriptor: a named pipe opens at once,
// without a writer, where a blocking open waits for one, perhaps forever,
// and no signal ends it. Open and regfile.Open both begin so: Open keeps
// the descriptor non-blocking, for the poller to wait on a pipe's data;
// regfile refuses all but a regular file and makes it blocking again, to
// keep it from the poller.
func OpenNonblocking(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
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
