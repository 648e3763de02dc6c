//go:build linux && !(amd64 || arm64 || riscv64 || ppc64 || ppc64le || s390x)

package tree

import "golang.org/x/sys/unix"

// fstatat lstats name in the directory open as fd.
func fstatat(fd int, name string, st *unix.Stat_t) error {
	for {
		if err := unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			return err
		}
	}
}
