package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A download kept above the watchdog's floor is ended by its time
// bound, in each command that downloads: from the recipe's
// limits.download-timeout, or --download-timeout, which wins; the error
// names the URL at its recipe line.
func TestDownloadTimeoutInEveryCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000000")
		for {
			if _, err := w.Write(make([]byte, 64)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	write := func(name, limit string) string {
		file := filepath.Join(dir, name, "pallet.yaml")
		writeFile(t, file, fmt.Sprintf(`version: 1
limits:
  stall: 100ms
  %s
artifacts:
  a:
    url: {url: %s/a.tgz, sha256: %s}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, dest: /a/}
`, limit, srv.URL, strings.Repeat("0", 64)))
		return file
	}
	recipe := write("a", "download-timeout: 300ms")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "-q", "-f", recipe, "--no-cache", "-o", "oci:" + filepath.Join(dir, "out")}, "300ms"},
		{[]string{"build", "-q", "-f", recipe, "--no-cache", "--download-timeout", "200ms", "-o", "oci:" + filepath.Join(dir, "out")}, "200ms"},
		{[]string{"fetch", "-q", "-f", recipe, "--mirror", filepath.Join(dir, "mirror")}, "300ms"},
		{[]string{"fetch", "-q", "-f", recipe, "--download-timeout", "200ms", "--mirror", filepath.Join(dir, "mirror")}, "200ms"},
		{[]string{"lock", "-q", "-f", write("b", "entries: 1000"), "--update", "--download-timeout", "200ms"}, "200ms"},
	} {
		start := time.Now()
		_, err := pallet(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), "pallet.yaml:7:") || !strings.Contains(err.Error(), srv.URL+"/a.tgz: gave up after") ||
			!strings.Contains(err.Error(), "over the "+tc.want+" one download may take") {
			t.Errorf("%s: %v, want it ended after %s at pallet.yaml:7", strings.Join(tc.args, " "), err, tc.want)
		}
		if elapsed := time.Since(start); elapsed > 10*time.Second {
			t.Errorf("%s took %s", strings.Join(tc.args, " "), elapsed)
		}
	}
	if _, err := pallet(t, "lock", "-q", "-f", write("c", "download-timeout: soon")); err == nil || !strings.Contains(err.Error(), "pallet.yaml:2: limits.download-timeout") {
		t.Errorf("a bad limits.download-timeout: %v", err)
	}
	if _, err := pallet(t, "fetch", "-q", "-f", recipe, "--download-timeout", "0s", "--mirror", filepath.Join(dir, "m2")); err == nil || !strings.Contains(err.Error(), "--download-timeout 0s: want a positive duration") {
		t.Errorf("--download-timeout 0s: %v", err)
	}
}

// The recipe's limits.download-timeout bounds the build's registry
// requests too: a base whose manifest comes just fast enough for the
// stall watchdog is given up at the recipe's bound, not at the 1 h
// default.
func TestDownloadTimeoutReachesRegistryRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/manifests/") {
			w.WriteHeader(http.StatusOK) // GET /v2/
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", "1000000")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("0", 64))
		if r.Method == http.MethodHead {
			return
		}
		for {
			if _, err := w.Write([]byte(strings.Repeat(" ", 64))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "x")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, fmt.Sprintf(`version: 1
limits:
  stall: 100ms
  download-timeout: 300ms
artifacts:
  f:
    local: {path: f}
    licenses: none
images:
  app:
    base: %s/base:1
    platforms: linux/amd64
    files:
      - {artifact: f, dest: /f}
`, host))
	start := time.Now()
	_, err := pallet(t, "build", "-q", "-f", recipe, "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "over the 300ms one registry request may take") {
		t.Errorf("build on a trickled base: %v, want it given up at the recipe's 300ms", err)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("build on a trickled base took %s", elapsed)
	}
}
