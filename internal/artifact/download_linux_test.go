package artifact_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A disk that cannot take the download (full, read-only) fails it at
// once: retrying the transfer does not mend it, and each retry waited out
// its backoff and fetched the body again.
func TestDownloadDoesNotRetryDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mounting needs root")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) { w.Write(payload) })
	dst := filepath.Join(dir, "download")
	err := fetcher(t).Download(context.Background(), srv.URL+"/big.tgz", sum(payload), dst)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("got %v, want the URL and no space left", err)
	}
	if got := srv.requests(); got != 1 {
		t.Errorf("%d requests, want 1: a full disk is not worth retrying", got)
	}
	noFile(t, dst)
	onlyFiles(t, dir)
}
