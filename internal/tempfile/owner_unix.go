//go:build unix

package tempfile

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe says whether the current user owns the file: in a shared
// temporary directory, other users' work dirs are theirs to sweep.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
