package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// What pallet lock downloads and checks is kept in the build's cache
// (--cache-dir), so that the build after it downloads none of it again;
// with --no-cache it keeps nothing, and the build downloads each.
func TestLockKeepsDownloadsForTheBuild(t *testing.T) {
	files := map[string][]byte{
		"/tool-amd64.tar": fixture.Tar([]fixture.File{{Name: "tool", Content: "amd64 tool\n", Mode: 0o755}}),
		"/tool-arm64.tar": fixture.Tar([]fixture.File{{Name: "tool", Content: "arm64 tool\n", Mode: 0o755}}),
	}
	files["/SHA256SUMS"] = []byte(fixture.SHA256(files["/tool-amd64.tar"]) + "  tool-amd64.tar\n" + fixture.SHA256(files["/tool-arm64.tar"]) + "  tool-arm64.tar\n")
	var (
		mu  sync.Mutex
		got = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path]++
		mu.Unlock()
		fixture.Handler(files).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	requests := func(suffix string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for p, c := range got {
			if strings.HasSuffix(p, suffix) {
				n += c
			}
		}
		return n
	}
	recipe := `version: 1
artifacts:
  tool:
    url:
      url: "` + srv.URL + `/tool-{{arch}}.tar"
      checksums: "` + srv.URL + `/SHA256SUMS"
      extract: {}
    licenses: none
images:
  tool:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: tool, dest: /usr/local/bin/}
`
	for _, tc := range []struct {
		name string
		lock []string
		want int // requests for the archives by the build
	}{
		{"kept", nil, 0},
		{"no-cache", []string{"--no-cache"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pallet.yaml")
			writeFile(t, file, recipe)
			cacheDir := t.TempDir()
			mustPallet(t, append([]string{"lock", "-q", "-f", file, "--cache-dir", cacheDir}, tc.lock...)...)
			locked := requests(".tar")
			if locked != 2 {
				t.Fatalf("lock made %d requests for the archives, want 2", locked)
			}
			mustPallet(t, "build", "-q", "-f", file, "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
			if n := requests(".tar") - locked; n != tc.want {
				t.Errorf("the build after lock made %d requests for the archives, want %d", n, tc.want)
			}
			mu.Lock()
			clear(got)
			mu.Unlock()
		})
	}
}
