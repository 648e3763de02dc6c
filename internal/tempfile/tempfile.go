// Package tempfile creates the temporary files and directories that pallet
// renames into place once complete: outputs, mirror entries, cache entries.
//
// os.CreateTemp and os.MkdirTemp make them private (0600, 0700), right for
// scratch space but wrong for what becomes an OCI layout, a docker archive
// or a mirror served over HTTP: those must come out like any file the user
// creates, 0666 and 0777 less the umask.
//
// Exchange swaps one into place where the kernel can, so that the path
// never goes missing: an output replaced, a mirror's repository cloned
// again.
//
// It also makes the private work directory of each build (NewWorkDir),
// locked while the build runs, and sweeps those that killed builds left
// (SweepWorkDirs).
package tempfile

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// Create creates a new file in dir, named from pattern as os.CreateTemp
// does (the last "*" is replaced by a random string), open for writing.
func Create(dir, pattern string) (*os.File, error) {
	var f *os.File
	err := try(dir, pattern, func(name string) (err error) {
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		return err
	})
	return f, err
}

// Dir creates a new directory in dir, named like Create's files, and
// returns its path.
func Dir(dir, pattern string) (string, error) {
	var path string
	err := try(dir, pattern, func(name string) error {
		path = name
		return os.Mkdir(name, 0o777)
	})
	return path, err
}

// ownerSuffix names the lock file beside a directory made by DirLocked.
const ownerSuffix = ".lock"

// DirLocked is Dir with a lock held, until release, on a file beside the
// directory (its name and ".lock"): Sweep then removes the directory as
// soon as the lock is free (its process was killed) rather than after it
// has been idle. A build killed in a loop (a CI job cancelled again and
// again) otherwise leaves a whole output beside the real one each time
// for an hour. release unlocks and removes the lock file; the directory
// is the caller's to rename or remove.
func DirLocked(dir, pattern string) (path string, release func(), err error) {
	return locked(dir, pattern, func(name string) error { return os.Mkdir(name, 0o777) })
}

// CreateLocked is Create with a lock held, until release, beside the
// file, as DirLocked's: a docker archive a killed build was writing
// (gigabytes) is removed by the next build of it at once, not after an
// hour. The file is the caller's to close and rename or remove.
func CreateLocked(dir, pattern string) (f *os.File, release func(), err error) {
	_, release, err = locked(dir, pattern, func(name string) (err error) {
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		return err
	})
	return f, release, err
}

// locked makes a new name from pattern in dir with create, holding a
// lock beside it until release.
func locked(dir, pattern string, create func(string) error) (path string, release func(), err error) {
	var lock *flock.Flock
	err = try(dir, pattern, func(name string) error {
		// The lock first, then what it guards: Sweep never sees the
		// temporary without a live owner's lock beside it.
		l := flock.New(name+ownerSuffix, flock.SetFlag(os.O_CREATE|os.O_EXCL|os.O_RDWR))
		if ok, err := l.TryLock(); err != nil || !ok {
			if err == nil {
				err = fs.ErrExist
			}
			return err
		}
		if err := create(name); err != nil {
			l.Unlock()
			os.Remove(name + ownerSuffix)
			return err
		}
		path, lock = name, l
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return path, func() {
		os.Remove(path + ownerSuffix)
		lock.Unlock()
	}, nil
}

func try(dir, pattern string, create func(string) error) error {
	if strings.ContainsRune(pattern, os.PathSeparator) {
		return errors.New("tempfile: pattern contains a path separator")
	}
	prefix, suffix := split(pattern)
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36)+suffix)
		err := create(name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return err
	}
	return &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, pattern), Err: fs.ErrExist}
}

// split cuts pattern at its last "*", which the random string replaces:
// one before it is part of the name (a path's, in Beside).
func split(pattern string) (prefix, suffix string) {
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		return pattern[:i], pattern[i+1:]
	}
	return pattern, ""
}

// Abandoned is how long a temporary output, untouched, is taken to be the
// remains of a killed build and removed by the next build of that output.
const Abandoned = time.Hour

// Beside is the pattern of the temporaries path is written through, by
// WriteFile or as an output (a docker archive, a layout's directory).
func Beside(path string) string { return "." + filepath.Base(path) + ".new-*" }

// SweepBeside removes what killed builds left of path's temporaries
// (Beside), untouched for longer than Abandoned. A file pallet writes in a
// directory of the user's (a record, a metadata file, an SBOM) sweeps its
// own before it is written: nothing else would.
func SweepBeside(path string) { Sweep(filepath.Dir(path), Beside(path), Abandoned) }

// WriteFile writes data to path as a whole or not at all: into a new file
// beside it, renamed over path once written.
func WriteFile(path string, data []byte) error {
	tmp, err := Create(filepath.Dir(path), Beside(path))
	if err != nil {
		return err
	}
	// Removed only when it did not take path's place: after the rename
	// there is nothing to remove, and os.Remove tried unlink, then rmdir,
	// both failing (two of the nine system calls of each memo shard a
	// build saves, of which a cold build saves about 220).
	err = writeClose(tmp, data)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func writeClose(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Sweep removes what killed processes left in dir under names made from
// pattern (a Create or Dir pattern, its last "*" any string) and untouched for
// longer than idle: a temporary still being written changes as it grows
// (for a directory, somewhere inside), so one that has not for that long
// belongs to no running build.
func Sweep(dir, pattern string, idle time.Duration) {
	prefix, suffix := split(pattern)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		n := e.Name()
		if len(n) < len(prefix)+len(suffix) || !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, suffix) {
			continue
		}
		p := filepath.Join(dir, n)
		if base, ok := strings.CutSuffix(n, ownerSuffix); ok && e.Type().IsRegular() {
			// A lock left without its directory (renamed into place,
			// or removed, by an owner killed before release).
			if !names[base] {
				sweepOwnerless(p, "")
			}
			continue
		}
		if names[n+ownerSuffix] {
			sweepOwnerless(p+ownerSuffix, p)
			continue
		}
		if time.Since(lastChange(p)) > idle {
			os.RemoveAll(p)
		}
	}
}

// sweepOwnerless removes the lock file lock and what it guards (path,
// when not "") if no process holds the lock.
func sweepOwnerless(lock, path string) {
	l, free := freeLock(lock)
	if !free {
		return // its owner is running, or another sweeper took it
	}
	defer l.Close()
	if path != "" {
		os.RemoveAll(path)
	}
	os.Remove(lock)
}

// lastChange is the newest modification time in the tree at p.
func lastChange(p string) time.Time {
	var newest time.Time
	filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		return nil
	})
	return newest
}
