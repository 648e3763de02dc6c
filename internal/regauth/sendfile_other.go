//go:build !linux

package regauth

import (
	"io"
	"os"
)

// sendable reports no file: elsewhere sendfile sends from an offset of its
// own and moves the file's only when done (or, on Windows, locks the file
// against the watchdog's look at it), so the watchdog could not see it move.
func sendable(io.ReadCloser) (*os.File, bool) { return nil, false }
