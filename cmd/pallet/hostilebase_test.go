package main

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A base whose layer no importer unpacks as pallet would read it (a hard
// link to a path not yet there, a whiteout of "..") fails the build at
// the base's line, naming the base, the layer and the entry, and writes
// no output; a second build with the same cache says the same (a refused
// base leaves no view there). Both were built, and the image failed
// where it was unpacked (umoci: "link: no such file or directory").
func TestHostileBaseLayersRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []tar.Header
		want    string
	}{
		{"hard link first", []tar.Header{
			{Name: "a", Typeflag: tar.TypeLink, Linkname: "not/yet"},
			{Name: "not/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "not/yet", Typeflag: tar.TypeReg, Mode: 0o644},
		}, `entry "a": a hard link to "not/yet", which no earlier entry or lower layer holds`},
		{"whiteout of the parent", []tar.Header{
			{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "etc/sub/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "etc/sub/.wh...", Typeflag: tar.TypeReg, Mode: 0o644},
		}, `entry "etc/sub/.wh...": a whiteout of "..", which names no entry of its directory`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			layerDigest := linuxBaseLayout(t, dir, c.entries)
			writeFile(t, filepath.Join(dir, "app"), "app\n")
			writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: oci:base
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /usr/bin/}
`)
			cache := filepath.Join(dir, "cache")
			for range 2 {
				out := filepath.Join(dir, "out")
				_, err := pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
				for _, want := range []string{"pallet.yaml:8: image app (linux/amd64): base oci:base", "base layer 1 (" + layerDigest.String() + ")", c.want} {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("err = %v, want it to say %q", err, want)
					}
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Fatalf("the failed build left %s: %v", out, err)
				}
			}
		})
	}
}
