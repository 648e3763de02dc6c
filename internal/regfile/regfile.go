// Package regfile opens files for reading the way a builder reads its
// inputs: a great many regular files, each once, start to end.
//
// os.Open hands every file it opens to the runtime's poller, which on
// Linux cannot take a regular file: it sets the descriptor non-blocking,
// fails to register it with epoll, and sets it blocking again, five system
// calls on top of the open. A cold build of 100,000 small files opens each
// three times (hashed for the cache key, read for Go build info, copied
// into the layer), so those calls were a million and a half, at one to two
// microseconds each on a virtual machine. A descriptor opened here is
// never offered to the poller: one call to open, one to fstat it, one to
// make it blocking, one to close.
package regfile

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// Open opens the regular file at path for reading, following links. Any
// other file there when it is opened (a named pipe put in a regular
// file's place mid-build, a device, a directory) is refused at once with
// an error that is ErrNotRegular: a named pipe without waiting for a
// writer, where os.Open waits for one, perhaps forever.
func Open(path string) (*os.File, error) { return open(path) }

// ErrNotRegular is what Open's error is for a file that is not a regular
// one.
var ErrNotRegular = bounded.ErrNotRegular

// notRegular is the error for a file of type t opened as a regular one.
func notRegular(t fs.FileMode) error {
	return fmt.Errorf("%w (%s)", ErrNotRegular, bounded.TypeName(t))
}
