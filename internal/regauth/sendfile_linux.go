package regauth

import (
	"io"
	"os"
)

// sendable is the file a request body is, when the kernel may send it:
// Linux's sendfile reads from the file's offset and moves it, which is
// what the watchdog watches.
func sendable(body io.ReadCloser) (*os.File, bool) {
	f, ok := body.(*os.File)
	return f, ok
}
