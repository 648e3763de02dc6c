//go:build !linux

package uptodate

import (
	"io/fs"
	"os"

	"github.com/pallet-dev/pallet/internal/tree"
)

func list(dir string) ([]entry, error) {
	des, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	ents := make([]entry, len(des))
	for i, d := range des {
		info, err := d.Info()
		if err != nil {
			return nil, err
		}
		ents[i] = entry{name: d.Name(), stat: fromInfo(info)}
	}
	return ents, nil
}

func lstat(path string) (stat, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return stat{}, err
	}
	return fromInfo(info), nil
}

// fromInfo leaves ctime or inode zero where the system does not give
// them, which stamp refuses.
func fromInfo(info fs.FileInfo) stat {
	s := tree.StampOf(info)
	return stat{mode: uint64(info.Mode()), size: s.Size, mtime: s.ModTime, ctime: s.CTime, ino: s.Ino, dev: s.Dev,
		dir: info.IsDir(), link: info.Mode()&fs.ModeSymlink != 0}
}
