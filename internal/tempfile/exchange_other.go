//go:build !linux

package tempfile

import "errors"

// Exchange is Linux's; elsewhere it fails, and the caller falls back to
// two renames.
func Exchange(a, b string) error {
	return errors.New("no atomic exchange on this system")
}
