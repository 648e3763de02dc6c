package tempfile

import (
	"fmt"
	"os"

	"github.com/gofrs/flock"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// NewLock is flock.New for a lock file in a directory other programs can
// write to (a cache restored from a CI job, a shared $TMPDIR), opened with
// flag (os.O_CREATE to make it, os.O_RDONLY to take only one that is
// there). What is there and is not a regular file is refused: flock opens
// the path, and so followed a symlink, creating the file it names wherever
// that is, and waited for good on a named pipe, for a writer that never
// came. The open follows no link and waits on no pipe either, for one put
// there after the check.
func NewLock(path string, flag int) (*flock.Flock, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("lock file %s is %s, which pallet neither follows nor opens: remove it", path, bounded.TypeName(fi.Mode()))
	}
	return flock.New(path, flock.SetFlag(flag|openNoFollow)), nil
}
