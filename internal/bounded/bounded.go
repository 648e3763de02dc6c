// Package bounded reads inputs whole only up to a limit: a recipe, a
// note, an index.json or a password is small, and one that is not is
// refused rather than read into memory whatever its size.
package bounded

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TooLargeError is the error of a read that went past its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("over %d bytes", e.Limit) }

// ReadAll reads r to its end, failing with a *TooLargeError as soon as
// more than limit bytes come: one byte past the limit is read to tell a
// reader of exactly limit bytes from a longer one.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return b, nil
}

// ReadFile reads the file at path whole, failing with a *TooLargeError
// past limit bytes. The limit is what holds, not a size asked of the
// file first: path may be a pipe, or grow while it is read.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := ReadAll(f, limit)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}
