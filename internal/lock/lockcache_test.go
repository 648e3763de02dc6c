package lock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/fixture"
)

// Lock keeps in the cache what it downloaded and its checksum file
// vouched for, under its sha256, and not a download the checksum file
// disputes; what it did not keep leaves nothing behind in the cache.
func TestLockKeepsOnlyVouchedDownloads(t *testing.T) {
	w := newWorld(t)
	bogus := fixture.SHA256([]byte("not the archive"))
	w.site.set("/SHA256SUMS", []byte(w.sum("/cni-linux-amd64-1.0.tgz")+"  cni-linux-amd64-1.0.tgz\n"+bogus+"  cni-linux-arm64-1.0.tgz\n"))
	dir := t.TempDir()
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := w.lock(t, Options{Cache: c}); err == nil {
		t.Fatal("lock pinned a download its checksum file disagrees with")
	}
	vouched := w.sum("/cni-linux-amd64-1.0.tgz")
	if p, ok := c.VerifiedBlob(vouched); !ok {
		t.Errorf("the download the checksum file vouched for is not in the cache (%s)", p)
	}
	if _, err := os.Stat(c.Blob(w.sum("/cni-linux-arm64-1.0.tgz"))); !os.IsNotExist(err) {
		t.Errorf("the disputed download is in the cache: %v", err)
	}
	left, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("lock left %s in the cache's tmp", e.Name())
	}
}
