package main

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// A base whose view (what placing needs of it: its directories, links
// and files) is more than the cache's 4 MiB for other facts is kept all
// the same: such a base, a servercore-sized Windows one or a large Linux
// one, was read whole again, every layer decompressed, at every build.
func TestLargeBaseViewKept(t *testing.T) {
	dir := t.TempDir()
	// 50,000 files of 90-byte names: a view of some 4.3 MB.
	headers := make([]tar.Header, 0, 50_500)
	for d := range 500 {
		name := fmt.Sprintf("usr/share/doc/package-with-a-long-name-%03d/", d)
		headers = append(headers, tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755})
		for f := range 100 {
			headers = append(headers, tar.Header{Name: fmt.Sprintf("%schangelog-of-the-package-%03d.Debian.gz", name, f), Typeflag: tar.TypeReg, Mode: 0o644})
		}
	}
	linuxBaseLayout(t, dir, headers, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "latest"}))
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    tags: [v1]
    base: oci:base
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /usr/bin/}
`)
	cache := t.TempDir()
	for i := range 2 {
		// A new output each time: a build answered from its note would
		// not ask for the view at all.
		out := filepath.Join(t.TempDir(), "out")
		log := mustPallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
		if strings.Contains(log, "derived again") {
			t.Errorf("build %d: the base's view is not kept:\n%s", i+1, log)
		}
	}
	facts, err := filepath.Glob(filepath.Join(cache, "facts", "base-view-*", "*", "*"))
	if err != nil || len(facts) != 1 {
		t.Fatalf("base view facts: %v, %v; want one", facts, err)
	}
	if st, err := os.Stat(facts[0]); err != nil || st.Size() <= 4<<20 {
		t.Errorf("the kept view: %v, %v; want one over 4 MiB (else this test shows nothing)", st, err)
	}
}
