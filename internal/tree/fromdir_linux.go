package tree

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

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
// (fstatat), not looked up again from the root of its path. Checking a
// tree of many small files is mostly this (the up-to-date note), so it
// costs one system call per file and four per directory (open, list to
// the end, close), and allocates per directory, not per file: the names
// are one string, and each is passed to the kernel from it, terminated
// by the NUL that follows it there.
func ReadDirStats(dir string) ([]Stat, error) {
	fd, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	sc := listScratch.Get().(*scratch)
	defer listScratch.Put(sc)
	buf := sc.dirents[:]
	raw := sc.raw[:0]   // names, each followed by a NUL
	ends := sc.ends[:0] // where each name's NUL is in raw
	defer func() { sc.raw, sc.ends = raw[:0], ends[:0] }()
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= direntName; {
			reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
			if reclen < direntName || reclen > len(b) {
				return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
			}
			name := b[direntName:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." || len(name) == 0 {
				continue
			}
			raw = append(append(raw, name...), 0)
			ends = append(ends, int32(len(raw)-1))
		}
	}
	all := string(raw)
	names := sc.names[:0]
	defer func() { clear(names); sc.names = names[:0] }()
	start := 0
	for _, end := range ends {
		names = append(names, all[start:int(end)])
		start = int(end) + 1
	}
	// Listed in the file system's order (a hash on ext4): sorted here.
	slices.Sort(names)
	stats := make([]Stat, len(names))
	for i, name := range names {
		var st unix.Stat_t
		if err := fstatat(fd, name, &st); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(dir, name), Err: err}
		}
		stats[i] = Stat{Name: name, Stamp: stampOf(&st), Mode: typeOf(st.Mode) | fs.FileMode(st.Mode&0o777)}
	}
	return stats, nil
}

// Offsets into a linux_dirent64: inode (8 bytes), offset (8), record
// length (2), type (1), then the name, NUL-terminated.
const (
	direntReclen = 16
	direntName   = 19
)

// scratch is what listing a directory needs only while it lists.
type scratch struct {
	dirents [32 << 10]byte
	raw     []byte
	ends    []int32
	names   []string
}

var listScratch = sync.Pool{New: func() any { return new(scratch) }}

func openDir(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return fd, nil
	}
}

// typeOf is the type bits of a file's mode as os gives them.
func typeOf(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return 0
}
