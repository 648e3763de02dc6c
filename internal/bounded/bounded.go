// Package bounded reads inputs whole only up to a limit: a recipe, a
// note, an index.json or a password is small, and one that is not is
// refused rather than read into memory whatever its size.
package bounded

import (
	"errors"
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
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := ReadAll(f, limit)
	if err == nil && len(b) == 0 {
		err = Unwritten(f)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// ReadRegular is ReadFile for a file that must be a regular one: an entry
// of pallet's own cache, which pallet wrote as one. Anything else put in
// its place (a named pipe, a device, a directory) is an error at once,
// instead of a read that waits for a writer or never ends.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := Regular(f); err != nil {
		return nil, err
	}
	b, err := ReadAll(f, limit)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// ErrNotRegular is what Regular says of anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Regular refuses an open file that is not a regular one.
func Regular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return RegularInfo(f.Name(), fi)
}

// RegularInfo is Regular for the file at path whose status is fi.
func RegularInfo(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, TypeName(fi.Mode()))}
	}
	return nil
}

// TypeName names the type of a file of mode m for a refusal: "a
// directory", where m.Type() reads "d---------".
func TypeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	default:
		return "a file of type " + t.String()
	}
}

// Open opens the file at path for reading without waiting for a writer:
// os.Open of a named pipe blocks until something opens it to write, which
// may be never, and no signal ends a blocked open. A pipe is read as its
// writer writes; one that nothing writes to reads as empty (Unwritten).
func Open(path string) (*os.File, error) { return open(path) }

// ErrUnwritten is what reading a named pipe that nothing wrote to gives.
var ErrUnwritten = errors.New("a named pipe that nothing writes to")

// Unwritten is ErrUnwritten if f, from which nothing was read, is a named
// pipe, and nil otherwise (an empty file is read as empty).
func Unwritten(f *os.File) error {
	if fi, err := f.Stat(); err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		return ErrUnwritten
	}
	return nil
}
