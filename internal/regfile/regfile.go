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
// blocking from the start and never offered to the poller: one call to
// open, one to close.
package regfile

import "os"

// Open opens the file at path for reading. The caller expects a regular
// file: a FIFO blocks the open until a writer appears, as with os.Open,
// and a read from a descriptor that cannot be polled holds its thread.
func Open(path string) (*os.File, error) { return open(path) }
