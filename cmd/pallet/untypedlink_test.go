package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// The warning of a Windows link typed as a file link for want of its
// target says the recipe line of the placement that took it, where
// link: dir goes, and the archive entry it came from: it named the image
// and the layer only, and a layer may place several artifacts.
func TestUntypedWindowsLinkWarnedAtItsPlacement(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	writeFile(t, filepath.Join(dir, "l.tar"), string(fixture.Tar([]fixture.File{
		{Name: "app/a.txt", Content: "a"},
		{Name: "app/lnk", Link: "../missing"},
	})))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  f: {local: {path: ./f.txt}, licenses: none}
  l: {local: {path: ./l.tar, extract: {}}, licenses: none}
images:
  w:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: f, dest: /x/, layer: k}
      - {artifact: l, dest: /x/l/, layer: k}
`)
	out := mustPallet(t, "build", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	want := recipe + ":11:9: image w (windows/amd64), layer k: symlink /x/l/app/lnk -> ../missing: its target is not in the image's layers"
	if !strings.Contains(out, want) || !strings.Contains(out, "(artifact l: the archive "+filepath.Join(dir, "l.tar")+", its entry app/lnk)") {
		t.Errorf("pallet build said:\n%s\nwant a warning starting %q, naming the archive entry", out, want)
	}
}
