//go:build !linux

package output

import (
	"errors"
	"os"
)

// clone is Linux's; elsewhere blobs are copied.
func clone(dst, src *os.File) error {
	return errors.New("no file cloning on this system")
}

// isTerminal is not asked elsewhere: the file mode cannot tell a terminal
// from /dev/null, and refusing the latter would be wrong.
func isTerminal(f *os.File) bool { return false }

// soleLink reports false where the link count cannot be read: blobs are
// then copied, never linked from the previous layout.
func soleLink(os.FileInfo) bool { return false }
