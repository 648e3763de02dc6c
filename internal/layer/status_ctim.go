//go:build unix && !(darwin || ios || freebsd || netbsd)

package layer

import (
	"io/fs"
	"syscall"
)

// changeTime is the file's status-change time in nanoseconds: the one
// time stamp no program can set back after changing a file.
func changeTime(info fs.FileInfo) int64 {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
}
