//go:build !unix

package tree

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
