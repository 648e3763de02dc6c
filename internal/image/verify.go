package image

import (
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ErrBlobMismatch is wrapped by the errors for a base blob whose bytes or
// size are not those its descriptor gives.
var ErrBlobMismatch = errors.New("blob does not match its descriptor")

// verifiedReader streams a blob while hashing it. The read that completes
// the blob fails, instead of returning its last bytes, when the blob does
// not hash to the descriptor's digest, so a damaged blob never reaches an
// output whole. A blob shorter or longer than the descriptor's size fails
// too. Checking on the one read the consumer makes keeps memory flat and
// reads each blob once; a check before use would read it twice.
type verifiedReader struct {
	rc      io.ReadCloser
	what    string // the blob and where it is, for errors
	want    v1.Hash
	size    int64
	hash    hash.Hash
	n       int64
	checked bool
	err     error
	// onBad, if set, runs once when the blob is found to be wrong (to
	// remove a damaged copy so it is fetched again).
	onBad func()
}

func newVerifiedReader(rc io.ReadCloser, d v1.Descriptor, what string, onBad func()) (*verifiedReader, error) {
	h, err := hasherFor(d, what)
	if err != nil {
		return nil, err
	}
	return &verifiedReader{rc: rc, what: what, want: d.Digest, size: d.Size, hash: h, onBad: onBad}, nil
}

// hasherFor checks that d can be verified at all: it has a digest in an
// algorithm we can compute and a size that is not negative.
func hasherFor(d v1.Descriptor, what string) (hash.Hash, error) {
	if d.Digest.Hex == "" {
		return nil, fmt.Errorf("%s: the descriptor has no digest", what)
	}
	if d.Size < 0 {
		return nil, fmt.Errorf("%s: the descriptor gives a negative size %d", what, d.Size)
	}
	h, err := v1.Hasher(d.Digest.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return h, nil
}

func (v *verifiedReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	// Asking for one byte past the end is what shows a blob that is too long.
	if left := v.size - v.n; int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	k, err := v.rc.Read(p)
	if v.n+int64(k) > v.size {
		return 0, v.fail(fmt.Errorf("%s is longer than the %d bytes its descriptor gives: %w", v.what, v.size, ErrBlobMismatch))
	}
	v.hash.Write(p[:k])
	v.n += int64(k)
	if v.n == v.size && !v.checked {
		v.checked = true
		if got := hex.EncodeToString(v.hash.Sum(nil)); got != v.want.Hex {
			return 0, v.fail(fmt.Errorf("%s hashes to %s:%s, not to its digest: %w", v.what, v.want.Algorithm, got, ErrBlobMismatch))
		}
	}
	if err == io.EOF && v.n < v.size {
		return 0, v.fail(fmt.Errorf("%s is truncated: %d of the %d bytes its descriptor gives: %w", v.what, v.n, v.size, ErrBlobMismatch))
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read %s: %w", v.what, err)
	}
	return k, err
}

func (v *verifiedReader) fail(err error) error {
	v.err = err
	if v.onBad != nil {
		v.onBad()
		v.onBad = nil
	}
	return err
}

func (v *verifiedReader) Close() error { return v.rc.Close() }
