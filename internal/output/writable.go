package output

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pallet-dev/pallet/internal/tempfile"
)

// CheckWritableTargets is CheckWritable for each output written to a
// file or directory.
func CheckWritableTargets(targets []Target) error {
	for _, t := range targets {
		var path string
		switch t := t.(type) {
		case *Layout:
			path = t.Dir
		case *DockerArchive:
			if t.Writer != nil {
				continue
			}
			path = t.File
		default:
			continue
		}
		if err := CheckWritable(path); err != nil {
			return fmt.Errorf("output %s: %w", t, err)
		}
	}
	return nil
}

// CheckWritable refuses, before any work, a file or directory pallet
// could not write at path: every output is written beside its place
// (tempfile.Beside) and renamed in, so the directory that holds path, or
// the nearest one that exists, must take a new file. A read-only file
// system or a directory without write permission otherwise failed the
// build at its last step, after all its work; a full disk still can.
func CheckWritable(path string) error {
	p, err := resolve(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return nil // the write's own error says what is in the way
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
	if done, err := probeUnnamed(dir); done {
		if err != nil {
			return fmt.Errorf("cannot write in %s (%v)", dir, err)
		}
		return nil
	}
	// A file named as the output's temporaries are, so that the sweep of
	// the next build of path takes it if this process dies before the
	// removal (where path's parent is dir: the nearest existing one may
	// be another's, and keep it until swept beside another output).
	f, err := tempfile.Create(dir, tempfile.Beside(p))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write in %s (%v)", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
