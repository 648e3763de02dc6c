//go:build !linux

package tree

import (
	"io/fs"
	"os"
	"path/filepath"
)

// statFiles calls do with an lstat of names in the open directory dir
// (at path on disk). It gives a regular file's stamp and permissions,
// and any other file's type.
func statFiles(_ *os.File, path string, do func(lstat func(name string) (Stamp, fs.FileMode, error)) error) error {
	return do(func(name string) (Stamp, fs.FileMode, error) {
		info, err := os.Lstat(filepath.Join(path, name))
		if err != nil {
			return Stamp{}, 0, err
		}
		if !info.Mode().IsRegular() {
			return Stamp{}, info.Mode(), nil
		}
		return StampOf(info), info.Mode(), nil
	})
}

// ReadDirStats lists dir's entries, sorted by name, each with its stamp
// and mode, not followed.
func ReadDirStats(dir string) ([]Stat, error) {
	des, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	stats := make([]Stat, len(des))
	for i, d := range des {
		info, err := d.Info()
		if err != nil {
			return nil, err
		}
		stats[i] = Stat{Name: d.Name(), Stamp: StampOf(info), Mode: info.Mode()}
	}
	return stats, nil
}
