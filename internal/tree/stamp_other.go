//go:build !unix

package tree

import "io/fs"

// sysStamp has nothing to add where os.FileInfo carries no inode, device
// or change time (Windows): size and mtime alone identify a file there.
func sysStamp(fs.FileInfo) (ino, dev uint64, ctime int64) { return 0, 0, 0 }
