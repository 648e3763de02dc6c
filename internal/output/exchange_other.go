//go:build !linux

package output

import "errors"

// exchange is Linux's; elsewhere swapDir falls back to two renames.
func exchange(a, b string) error {
	return errors.New("no atomic exchange on this system")
}
