package tempfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/gofrs/flock"

	"github.com/pallet-dev/pallet/internal/lazyre"
)

// A build's scratch directory is named pallet-build-<random> and holds a
// lock file, flocked for as long as the build runs: the kernel drops the
// lock when the process dies however it dies, so a later build can tell
// the remains of a killed build (lock free) from a build still running
// (lock held) and remove only the former.

const (
	// workPrefix names build work directories. Work dirs made by os.MkdirTemp
	// (before they had locks) have decimal suffixes, ours base 36: both
	// match workName.
	workPrefix = "pallet-build-"
	// workLock is the lock file inside a work dir.
	workLock = ".pallet-build.lock"
	// unlockedIdle is how long a work dir without a lock file must be
	// untouched before it is swept: one made by an older pallet (no lock),
	// or by a build killed between creating it and locking it. The older
	// pallet might still be running, so the rule is the conservative one.
	unlockedIdle = 24 * time.Hour
)

// workName is the exact shape of the names pallet gives work dirs.
var workName = lazyre.New(`^` + regexp.QuoteMeta(workPrefix) + `[0-9a-z]+$`)

// WorkDir is a build's scratch directory, locked while the build runs.
type WorkDir struct {
	// Path is the directory.
	Path string
	lock *flock.Flock
}

// NewWorkDir creates a private work directory named pallet-build-* in
// parent (os.TempDir() when empty) and holds its lock until Remove.
func NewWorkDir(parent string) (*WorkDir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	var dir string
	err := try(parent, workPrefix+"*", func(name string) error {
		dir = name
		return os.Mkdir(name, 0o700)
	})
	if err != nil {
		return nil, fmt.Errorf("create work directory in %s: %w", parent, err)
	}
	lock, err := lockNew(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("lock work directory %s: %w", dir, err)
	}
	return &WorkDir{Path: dir, lock: lock}, nil
}

// Remove deletes the work directory and releases its lock.
func (w *WorkDir) Remove() error {
	// All but the lock first: a build killed while it removes its work
	// dir (a base's files, a module cache) leaves it with a lock no one
	// holds, which the next build sweeps, not without one, which was
	// kept for a day as an older pallet's.
	err := removeAllBut(w.Path, workLock)
	var uerr error
	if unlockToRemove {
		uerr = w.lock.Close()
	}
	// What could not be removed stays, with the lock, for the sweep.
	if err == nil {
		err = removeTree(w.Path)
	}
	if !unlockToRemove {
		uerr = w.lock.Close()
	}
	if err == nil && uerr != nil {
		err = fmt.Errorf("unlock work directory %s: %w", w.Path, uerr)
	}
	return err
}

// removeEntry removes one entry of a work dir and what it holds; a
// variable, so that a test can stop a removal half-way, as a kill does.
var removeEntry = removeTree

// removeAllBut removes what dir holds but the entry named keep.
func removeAllBut(dir, keep string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("remove work directory %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.Name() == keep {
			continue
		}
		if err := removeEntry(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// SweepWorkDirs removes the work directories that killed builds left in
// parent (os.TempDir() when empty) and returns their paths. It takes only
// directories of the current user named exactly as NewWorkDir (or an older
// pallet) names them, whose lock it can take, so the directory of a build
// still running is never touched; a directory without a lock file is taken
// only once untouched for a day. Directories it cannot remove are
// reported in the error, after the others are removed.
func SweepWorkDirs(parent string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("sweep work directories in %s: %w", parent, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !workName().MatchString(e.Name()) || e.Type() != fs.ModeDir {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		ok, err := sweepOne(dir)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, dir)
		}
	}
	return removed, errors.Join(errs...)
}

// sweepOne removes dir if no build holds it, holding its lock meanwhile so
// that two sweepers do not race.
func sweepOne(dir string) (bool, error) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || !ownedByMe(fi) {
		return false, nil
	}
	lockPath := filepath.Join(dir, workLock)
	li, err := os.Lstat(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		if removed, err := sweepUnborn(dir, fi); removed || err != nil {
			return removed, err
		}
		if time.Since(lastChange(dir)) <= unlockedIdle {
			return false, nil
		}
		return true, removeTree(dir)
	}
	if err != nil || !li.Mode().IsRegular() || time.Since(li.ModTime()) < lockGrace {
		return false, nil
	}
	l, free := freeLock(lockPath)
	if !free {
		return false, nil
	}
	defer l.Close()
	if err := removeTree(dir); err != nil {
		return false, err
	}
	return true, nil
}

// unbornGrace is how long a work dir may hold nothing but its staged,
// free lock (or nothing at all) before it is taken for a build killed
// while NewWorkDir made it: between two system calls, so seconds are
// ample.
const unbornGrace = 10 * time.Second

// sweepUnborn removes dir when it holds nothing but a free staged lock
// file, or nothing, and has not changed for unbornGrace: a build killed
// between making it and putting its lock in place. Such a dir has no
// lock to tell it from a live build's, and was kept as an older
// pallet's for a day, one for each build killed there. It is removed
// entry by entry, never recursively, so a build that is only slow
// loses nothing it wrote: its lock's rename fails, with an error.
func sweepUnborn(dir string, fi fs.FileInfo) (bool, error) {
	if time.Since(fi.ModTime()) < unbornGrace {
		return false, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 1 || len(ents) == 1 && (ents[0].Name() != workLock+".new" || !ents[0].Type().IsRegular()) {
		return false, nil
	}
	if len(ents) == 1 {
		staged := filepath.Join(dir, ents[0].Name())
		l, free := freeLock(staged)
		if !free {
			return false, nil
		}
		err := os.Remove(staged)
		l.Close()
		if err != nil {
			return false, nil
		}
	}
	if err := os.Remove(dir); err != nil {
		return false, nil
	}
	return true, nil
}

// freeLock takes the lock at path if no process holds it. The file is
// opened as it is, never created: creating it here could put a lock into
// a directory just being removed. One that is not a regular file is never
// free, so what it guards is left.
func freeLock(path string) (*flock.Flock, bool) {
	l, err := NewLock(path, os.O_RDONLY)
	if err != nil {
		return nil, false
	}
	if ok, err := l.TryLock(); err != nil || !ok {
		return nil, false
	}
	return l, true
}

// removeTree removes dir, making read-only directories in it writable
// first when needed: builds leave some (Go's module cache makes its
// directories read-only), which os.RemoveAll alone cannot empty.
func removeTree(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if info, ierr := d.Info(); ierr == nil && info.Mode().Perm()&0o700 != 0o700 {
				os.Chmod(p, info.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove work directory %s: %w", dir, err)
	}
	return nil
}
