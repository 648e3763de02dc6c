package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A layer is written as soon as the artifacts it places are ready: the
// download here is held until the other layer is in the cache, which
// only a build that does not wait for every artifact first gets past.
func TestLayerDoesNotWaitForOtherArtifacts(t *testing.T) {
	cacheDir := t.TempDir()
	srv, release := heldDownload(t, 30*time.Second, filepath.Join(cacheDir, "layers"), "no layer was written while the download was held")
	sum := sha256.Sum256(release)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "local.txt"), "local\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  local:
    local: {path: ./local.txt}
    licenses: none
  release:
    url:
      url: "`+srv.URL+`/release.txt"
      sha256: `+hex.EncodeToString(sum[:])+`
    licenses: none
images:
  app:
    repository: example.com/app
    base: scratch
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: local, dest: /local.txt}
      - {artifact: release, dest: /release.txt}
`)
	mustPallet(t, "build", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
}

// A base's view (what its layers hold, which every layer placed on it
// goes through) is read while the artifacts are fetched and built, not
// after: the download here is held until the view is in the cache, which
// only a build that reads it early gets past.
func TestBaseViewReadWhileArtifactsAreFetched(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "base.txt"), "base\n")
	baseRecipe := filepath.Join(dir, "base.yaml")
	writeFile(t, baseRecipe, `version: 1
artifacts:
  f:
    local: {path: ./base.txt}
    licenses: none
images:
  base:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: f, dest: /etc/base.txt}
`)
	mustPallet(t, "build", "-q", "-f", baseRecipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "base"))

	cacheDir := t.TempDir()
	srv, release := heldDownload(t, 10*time.Second, filepath.Join(cacheDir, "facts", "base-view-v6"), "the base's view was not read while the download was held")
	sum := sha256.Sum256(release)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  release:
    url:
      url: "`+srv.URL+`/release.txt"
      sha256: `+hex.EncodeToString(sum[:])+`
    licenses: none
images:
  app:
    base: oci:base
    platforms: [linux/amd64]
    files:
      - {artifact: release, dest: /release.txt}
`)
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
}

// heldDownload serves a release, held until something is in dir (for at
// most wait; then it fails with why), and says what it serves.
func heldDownload(t *testing.T, wait time.Duration, dir, why string) (*httptest.Server, []byte) {
	t.Helper()
	release := []byte("a release\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				w.Write(release)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		http.Error(w, why, http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, release
}
