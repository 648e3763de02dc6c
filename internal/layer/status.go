package layer

import (
	"io/fs"
	"os"
)

// sameStatus reports whether a and b, two stats of one open file, say it
// was left alone in between: same file, size, mtime and change time.
func sameStatus(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && changeTime(a) == changeTime(b)
}
