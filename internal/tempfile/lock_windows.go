package tempfile

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// unlockToRemove: Windows removes neither an open file nor its directory.
const unlockToRemove = true

// lockGrace is how old a free lock file must be before SweepWorkDirs
// takes its directory: lockNew creates it, then locks it, and a sweep
// between the two must not take a running build's.
const lockGrace = time.Minute

// lockNew creates and locks the lock file in place: Windows does not
// rename an open file. SweepWorkDirs leaves a lock file younger than
// lockGrace alone, which covers the moment before it is locked.
func lockNew(dir string) (*flock.Flock, error) {
	l := flock.New(filepath.Join(dir, workLock), flock.SetFlag(os.O_CREATE|os.O_EXCL|os.O_RDWR))
	ok, err := l.TryLock()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("lock taken by another process")
	}
	return l, nil
}
