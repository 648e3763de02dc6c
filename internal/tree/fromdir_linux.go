package tree

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/bounded"
	"golang.org/x/sys/unix"
)

// On Linux a directory is listed with getdents into a pooled buffer and
// its names kept as one string, and each file is stat'ed by its name
// relative to the open directory (fstatat), passed to the kernel from
// that string, terminated by the NUL that follows it there: one system
// call per file, four per directory (open, list to the end, close), and
// no allocation per file. Checking a tree of many small files (the
// up-to-date note, FromDir) is mostly this. Before, os.Open and ReadDir
// cost about ten system calls a directory (fcntl, epoll registration) and
// three allocations a file, and unix.Fstatat one more copying the name.

// dir is a directory open for listing and stat'ing its files.
type dir struct {
	fd   int
	path string
	sc   *scratch
}

// dirent is a name listed in a directory and its type.
type dirent struct {
	name string
	typ  fs.FileMode
}

// scratch is what listing a directory needs only while it lists.
type scratch struct {
	buf   [32 << 10]byte
	raw   []byte
	ents  []dirent
	types []fs.FileMode
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

func openDir(path string) (*dir, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &dir{fd: fd, path: path, sc: scratches.Get().(*scratch)}, nil
	}
}

func (d *dir) close() {
	unix.Close(d.fd)
	clear(d.sc.ents)
	scratches.Put(d.sc)
	d.sc = nil
}

// list gives the directory's entries sorted by name, valid until close.
// A type the file system does not list is looked up.
func (d *dir) list() ([]dirent, error) {
	sc := d.sc
	raw, types := sc.raw[:0], sc.types[:0] // names, each followed by a NUL
	defer func() { sc.raw, sc.types = raw[:0], types[:0] }()
	for {
		n, err := unix.Getdents(d.fd, sc.buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: d.path, Err: err}
		}
		if n <= 0 {
			break
		}
		for b := sc.buf[:n]; len(b) >= direntName; {
			reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
			if reclen < direntName || reclen > len(b) {
				return nil, &fs.PathError{Op: "readdirent", Path: d.path, Err: unix.EIO}
			}
			typ := b[direntType]
			name := b[direntName:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." || len(name) == 0 {
				continue
			}
			raw = append(append(raw, name...), 0)
			types = append(types, dtType(typ))
		}
	}
	all := string(raw)
	ents := sc.ents[:0]
	for _, typ := range types {
		end := strings.IndexByte(all, 0)
		ents = append(ents, dirent{name: all[:end], typ: typ})
		all = all[end+1:]
	}
	sc.ents = ents
	// Listed in the file system's order (a hash on ext4): sorted here.
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	for i := range ents {
		if ents[i].typ == unknownType {
			var st unix.Stat_t
			if err := d.fstatat(ents[i].name, &st); err != nil {
				return nil, err
			}
			ents[i].typ = bounded.TypeOfStat(st.Mode)
		}
	}
	return ents, nil
}

// lstat gives the stamp and mode of name, one of the directory's listed
// names, not followed.
func (d *dir) lstat(name string) (Stamp, fs.FileMode, error) {
	var st unix.Stat_t
	if err := d.fstatat(name, &st); err != nil {
		return Stamp{}, 0, err
	}
	return stampOf(&st), bounded.TypeOfStat(st.Mode) | fs.FileMode(st.Mode&0o777), nil
}

func (d *dir) fstatat(name string, st *unix.Stat_t) error {
	if err := fstatat(d.fd, name, st); err != nil {
		return &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// stampOf converts each field: their types differ between platforms
// (32-bit times and devices on some).
func stampOf(st *unix.Stat_t) Stamp {
	return Stamp{
		Size:    int64(st.Size),
		ModTime: int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec),
		CTime:   int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
		Ino:     uint64(st.Ino),
		Dev:     uint64(st.Dev),
	}
}

// Offsets into a linux_dirent64: inode (8 bytes), offset (8), record
// length (2), type (1), then the name, NUL-terminated.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

// unknownType marks a type the listing did not give.
const unknownType = ^fs.FileMode(0)

// dtType is the type bits of a mode for a listed d_type.
func dtType(t byte) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return unknownType
}
