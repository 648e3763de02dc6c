//go:build !windows

package tempfile

import "syscall"

// openNoFollow makes an open fail on a symlink and return at once on a
// named pipe.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
