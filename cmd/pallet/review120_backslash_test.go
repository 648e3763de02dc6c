package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A backslash in a name found in a local directory is a character of
// it, as in an archive's (TestBackslashInAnArchiveNameKept): the Linux
// layer holds the name byte for byte, whether the directory is placed
// whole or the file is named by path:, built afresh and from the cache;
// a Windows image refuses it in words.
func TestReview120BackslashFromDisk(t *testing.T) {
	const unit = `system-systemd\x2dcryptsetup.slice`
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "units"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "units", unit), "[Unit]\n")
	writeFile(t, filepath.Join(dir, "units", "plain.service"), "[Unit]\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
args:
  BASE: scratch
  PF: linux/amd64
artifacts:
  units:
    local: {path: ./units}
    licenses: none
images:
  app:
    base: "{{BASE}}"
    platforms: ["{{PF}}"]
    files:
      - {artifact: units, dest: /lib/systemd/system/}
      - {artifact: units, path: 'system-systemd\x2dcryptsetup.slice', dest: /etc/systemd/}
`)
	cache := t.TempDir()
	for _, run := range []string{"afresh", "from the cache"} {
		out := filepath.Join(t.TempDir(), "o")
		mustPallet(t, "build", "-q", "--cache-dir", cache, "-f", recipe, "-o", "oci:"+out)
		layers, err := dfImage(t, out).Layers()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range layers {
			walkLayer(t, l, func(h *tar.Header, r io.Reader) {
				if h.Typeflag == tar.TypeReg {
					names = append(names, h.Name)
				}
			})
		}
		slices.Sort(names)
		want := []string{`etc/systemd/` + unit, "lib/systemd/system/plain.service", `lib/systemd/system/` + unit}
		if !slices.Equal(names, want) {
			t.Errorf("%s: the layers hold the files %q, want %q", run, names, want)
		}
	}
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "--arg", "BASE=windows-hostprocess-scratch", "--arg", "PF=windows/amd64", "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if err == nil || !strings.Contains(err.Error(), unit+` holds a backslash, which Windows reads as a separator`) {
		t.Errorf("Windows: got %v, want the backslash refused", err)
	}
}
