package tempfile

import "golang.org/x/sys/unix"

// Exchange swaps the paths a and b in one step (renameat2
// RENAME_EXCHANGE): a directory made beside a path takes its place as
// what was there moves to its name, and at no instant is the path
// missing, even if the process dies. It fails where the kernel or the
// file system cannot (EINVAL, ENOSYS): the caller falls back to two
// renames.
func Exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
