package output

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// clone makes dst share src's extents, copy on write (FICLONE). It fails
// where the file system cannot (ext4, tmpfs, another file system).
func clone(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}

// isTerminal says whether f is a terminal, where a tar archive is only
// noise.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// soleLink reports whether info's file has no other name: a blob shared
// with anything but the layout it is in (a cache entry linked by an older
// pallet) is not carried into a new layout.
func soleLink(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}
