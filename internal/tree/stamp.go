package tree

import (
	"io/fs"
	"os"
	"time"
)

// Stamp identifies one version of a file without reading it, by what
// git's index compares: size, mtime, ctime, inode and device. Rewriting a
// file in place and restoring its mtime (os.Chtimes, touch -r, tar -x)
// keeps size and mtime, but the kernel sets the ctime to the time of the
// change and no program can set it back. The zero Stamp is unknown.
type Stamp struct {
	Size, ModTime, CTime int64
	Ino, Dev             uint64
}

// StampOf is the stamp of the file info describes.
func StampOf(info fs.FileInfo) Stamp {
	ino, dev, ctime := sysStamp(info)
	return Stamp{Size: info.Size(), ModTime: info.ModTime().UnixNano(), CTime: ctime, Ino: ino, Dev: dev}
}

// Known says whether s was taken from a file at all.
func (s Stamp) Known() bool { return s != Stamp{} }

// Settled reports whether the file was last changed (content or status)
// longer than granularity before now: one changed again within its
// timestamps' granularity could keep the stamp it had when it was read.
func (s Stamp) Settled(now time.Time, granularity time.Duration) bool {
	return now.UnixNano()-max(s.ModTime, s.CTime) > int64(granularity)
}

// Stat is a file's stamp and mode, its type included, as lstat gives
// them: what changes when anything writes the file or its directory
// entry.
type Stat struct {
	Name  string
	Stamp Stamp
	Mode  fs.FileMode
}

// Lstat gives path's Stat, not followed.
func Lstat(path string) (Stat, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return Stat{}, err
	}
	return Stat{Name: info.Name(), Stamp: StampOf(info), Mode: info.Mode()}, nil
}
