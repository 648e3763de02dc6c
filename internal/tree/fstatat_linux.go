//go:build linux && (amd64 || arm64 || riscv64 || ppc64 || ppc64le || s390x)

package tree

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat lstats name, a substring of a string in which a NUL follows
// it, in the directory open as fd. The name goes to the kernel as it is
// (unix.Fstatat would copy it to add the NUL: an allocation per file).
func fstatat(fd int, name string, st *unix.Stat_t) error {
	for {
		_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(unsafe.StringData(name))), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}
