//go:build unix

package lock

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives tmp the owner and group of found, the recipe it is to
// be renamed over. A rename takes the new file's owner, its creator's: a
// recipe in a user's checkout locked by root (sudo, a CI container on a
// bind mount) would become root's, and, mode 0640, unreadable to its
// user. Where the owner cannot be given, nothing is written: the recipe
// would change hands silently.
func keepOwner(tmp *os.File, found fs.FileInfo) error {
	want, ok := found.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	if got, ok := fi.Sys().(*syscall.Stat_t); ok && got.Uid == want.Uid && got.Gid == want.Gid {
		return nil
	}
	if err := tmp.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return fmt.Errorf("the rewritten recipe cannot keep its owner (uid %d, gid %d), so nothing was written: %w", want.Uid, want.Gid, err)
	}
	return nil
}

// links is the number of names fi's file has.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
