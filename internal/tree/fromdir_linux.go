package tree

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// statFiles calls do with an lstat of names in the open directory dir
// (at path on disk). It gives a regular file's stamp and permissions,
// and any other file's type. On Linux a name is looked up from the
// directory's descriptor (fstatat), not from the root of its path, and
// nothing is allocated per file.
func statFiles(dir *os.File, path string, do func(lstat func(name string) (Stamp, fs.FileMode, error)) error) error {
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var doErr error
	err = rc.Control(func(fd uintptr) {
		doErr = do(func(name string) (Stamp, fs.FileMode, error) {
			var st unix.Stat_t
			var err error
			for {
				if err = unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
					break
				}
			}
			if err != nil {
				return Stamp{}, 0, &fs.PathError{Op: "lstat", Path: filepath.Join(path, name), Err: err}
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				// Rare (replaced since listed): os names the type.
				info, err := os.Lstat(filepath.Join(path, name))
				if err != nil {
					return Stamp{}, 0, err
				}
				return Stamp{}, info.Mode(), nil
			}
			return stampOf(&st), fs.FileMode(st.Mode & 0o777), nil
		})
	})
	if err != nil {
		return err
	}
	return doErr
}

func stampOf(st *unix.Stat_t) Stamp {
	return Stamp{
		Size:    st.Size,
		ModTime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		CTime:   st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		Ino:     st.Ino,
		Dev:     st.Dev,
	}
}

// ReadDirStats lists dir's entries, sorted by name, each with its stamp
// and mode, not followed. Each is stat'ed from the open directory
// (fstatat), not looked up again from the root of its path.
func ReadDirStats(dir string) ([]Stat, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	stats := make([]Stat, len(des))
	var statErr error
	err = rc.Control(func(fd uintptr) {
		for i, d := range des {
			var st unix.Stat_t
			var err error
			for {
				if err = unix.Fstatat(int(fd), d.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
					break
				}
			}
			if err != nil {
				statErr = &fs.PathError{Op: "lstat", Path: filepath.Join(dir, d.Name()), Err: err}
				return
			}
			stats[i] = Stat{Name: d.Name(), Stamp: stampOf(&st), Mode: d.Type() | fs.FileMode(st.Mode&0o777)}
		}
	})
	if err != nil {
		return nil, err
	}
	return stats, statErr
}
