package uptodate

import (
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// list reads dir's entries, sorted by name, each stated relative to the
// open directory: no path is looked up again from the root per file.
func list(dir string) ([]entry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	fd := int(f.Fd())
	ents := make([]entry, len(names))
	for i, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, &os.PathError{Op: "fstatat", Path: dir + "/" + name, Err: err}
		}
		ents[i] = entry{name: name, stat: fromStat(&st)}
	}
	return ents, nil
}

func lstat(path string) (stat, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return stat{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return fromStat(&st), nil
}

func fromStat(st *unix.Stat_t) stat {
	return stat{
		mode: uint64(st.Mode), size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
		ino: st.Ino, dev: st.Dev,
		dir:  st.Mode&unix.S_IFMT == unix.S_IFDIR,
		link: st.Mode&unix.S_IFMT == unix.S_IFLNK,
	}
}
