//go:build !unix

package layer

import "io/fs"

// changeTime is unknown where fs.FileInfo carries none (Windows): size,
// mtime and identity alone tell a changed file there.
func changeTime(fs.FileInfo) int64 { return 0 }
