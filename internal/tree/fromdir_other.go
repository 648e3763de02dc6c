//go:build !linux

package tree

import (
	"io/fs"
	"os"
	"path/filepath"
)

// dir is a directory listed by os.ReadDir, its files stat'ed by path.
type dir struct{ path string }

// dirent is a name listed in a directory and its type.
type dirent struct {
	name string
	typ  fs.FileMode
}

func openDir(path string) (*dir, error) { return &dir{path: path}, nil }

func (d *dir) close() {}

// list gives the directory's entries sorted by name.
func (d *dir) list() ([]dirent, error) {
	des, err := os.ReadDir(d.path) // sorted by name
	if err != nil {
		return nil, err
	}
	ents := make([]dirent, len(des))
	for i, e := range des {
		ents[i] = dirent{name: e.Name(), typ: e.Type()}
	}
	return ents, nil
}

// lstat gives the stamp and mode of name in the directory, not followed.
func (d *dir) lstat(name string) (Stamp, fs.FileMode, error) {
	info, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return Stamp{}, 0, err
	}
	return StampOf(info), info.Mode(), nil
}
