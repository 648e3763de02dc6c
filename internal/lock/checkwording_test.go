package lock

import (
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A download its checksum file disagrees with ends each run saying what
// that run did: lock wrote nothing, and --check, which never pins, does
// not say it pinned nothing.
func TestChecksumMismatchSaysWhatTheRunDid(t *testing.T) {
	w := newWorld(t)
	bogus := fixture.SHA256([]byte("not the archive"))
	w.site.set("/SHA256SUMS", []byte(w.sum("/cni-linux-amd64-1.0.tgz")+"  cni-linux-amd64-1.0.tgz\n"+bogus+"  cni-linux-arm64-1.0.tgz\n"))
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{}, "; nothing was written"},
		{Options{Check: true}, "; neither is taken as the digest to check the recipe's pin against"},
	} {
		_, err := w.lock(t, tc.opt)
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) || strings.Contains(err.Error(), "pinned nothing") {
			t.Errorf("lock %+v: %v, want it to end %q", tc.opt, err, tc.want)
		}
		if w.read(t) != w.src {
			t.Errorf("lock %+v wrote the recipe", tc.opt)
		}
	}
}
