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
