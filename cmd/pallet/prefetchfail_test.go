package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A build whose artifact fails does not wait for the base's view, read
// ahead while the artifacts were fetched, to download the base's layers:
// the failure is reported at once.
func TestFailedBuildDoesNotWaitForBaseView(t *testing.T) {
	var hold atomic.Bool
	var blobs atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hold.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && blobs.Add(1) > 1 {
				select {
				case <-release:
				case <-time.After(20 * time.Second):
				case <-r.Context().Done():
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	base := smallRecipe(t, "scratch", "base\n")
	mustPallet(t, "build", "-q", "-f", base, "-o", "registry:"+reg.Host+"/base:1", "--no-cache")

	fail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second)
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(fail)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  gone:
    url:
      url: "`+srv.URL+`/gone.txt"
      sha256: 0000000000000000000000000000000000000000000000000000000000000000
    licenses: none
images:
  app:
    base: `+reg.Host+`/base:1
    platforms: [linux/amd64]
    files:
      - {artifact: gone, dest: /gone.txt}
`)
	hold.Store(true)
	start := time.Now()
	out, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil {
		t.Fatalf("the build of a missing download succeeded:\n%s", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the failed build took %v: it waited for the base's layers", d)
	}
}
