//go:build !windows

package tempfile

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// unlockToRemove: the lock is held while the directory is removed, so no
// sweeper starts on it meanwhile.
const unlockToRemove = false

// lockGrace is how old a free lock file must be before SweepWorkDirs
// takes its directory. None: lockNew renames it into place already
// locked, so a free one is a dead build's, and a build killed in a loop
// (a CI job cancelled again and again, a fault suite) left a work dir
// per kill for the minute a grace kept it.
const lockGrace = 0

// lockNew creates and locks the lock file under a temporary name, then
// renames it into place: the lock is held before any sweeper can see it.
// The open file keeps its lock across the rename.
func lockNew(dir string) (*flock.Flock, error) {
	staging := filepath.Join(dir, workLock+".new")
	l := flock.New(staging, flock.SetFlag(os.O_CREATE|os.O_EXCL|os.O_RDWR))
	ok, err := l.TryLock()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("lock taken by another process")
	}
	if err := os.Rename(staging, filepath.Join(dir, workLock)); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
