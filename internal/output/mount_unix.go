//go:build unix

package output

import (
	"os"
	"path/filepath"
	"syscall"
)

// otherFileSystem reports whether the directory dir is on another file
// system than its parent: a mount point.
func otherFileSystem(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(filepath.Dir(dir))
	if err != nil {
		return false, err
	}
	d, ok := fi.Sys().(*syscall.Stat_t)
	p, pok := pi.Sys().(*syscall.Stat_t)
	return ok && pok && d.Dev != p.Dev, nil
}
