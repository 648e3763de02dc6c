package output

import (
	"errors"

	"golang.org/x/sys/unix"
)

// probeUnnamed asks whether dir takes a new file with one that has no
// name (O_TMPFILE), which a kill cannot leave behind and which does not
// touch dir; done is false where the file system or kernel does not make
// such files, for the caller to probe with a named one.
func probeUnnamed(dir string) (done bool, err error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	switch {
	case err == nil:
		unix.Close(fd)
		return true, nil
	// EOPNOTSUPP: a file system without it; EISDIR, EINVAL: a kernel
	// older than 3.11 reading the flags as O_DIRECTORY.
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		return false, nil
	}
	return true, err
}
