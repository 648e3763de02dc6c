//go:build darwin || ios || freebsd || netbsd

package tree

import (
	"io/fs"
	"syscall"
)

// sysStamp is the part of a file's identity os.FileInfo does not carry:
// inode, device and status-change time, as git's index compares them.
func sysStamp(info fs.FileInfo) (ino, dev uint64, ctime int64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return uint64(st.Ino), uint64(st.Dev), int64(st.Ctimespec.Sec)*1e9 + int64(st.Ctimespec.Nsec)
}
