package main

import (
	"archive/tar"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A tar's names may hold a backslash as a character (Debian's systemd
// ships lib/systemd/system/system-systemd\x2dcryptsetup.slice): a Linux
// layer keeps the name, as GNU tar unpacks it and BuildKit's ADD keeps
// it, where pallet made a directory system-systemd of it. A Windows
// layer cannot hold it (Windows reads the backslash as a separator):
// refused, naming it.
func TestBackslashInAnArchiveNameKept(t *testing.T) {
	const unit = `lib/systemd/system/system-systemd\x2dcryptsetup.slice`
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "units.tar"), string(fixture.Tar([]fixture.File{
		{Name: "lib/systemd/system/", Dir: true, Mode: 0o755},
		{Name: unit, Content: "[Unit]", Mode: 0o644},
	})))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  units:
    local: {path: ./units.tar, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: units, dest: /}
`)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD units.tar /\n")
	for _, f := range []string{recipe, filepath.Join(dir, "Dockerfile")} {
		out := filepath.Join(t.TempDir(), "o")
		mustPallet(t, "build", "-q", "--no-cache", "-f", f, "-o", "oci:"+out)
		layers, err := dfImage(t, out).Layers()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		walkLayer(t, layers[len(layers)-1], func(h *tar.Header, r io.Reader) {
			names = append(names, h.Name)
		})
		if got := strings.Join(names, " "); !strings.Contains(got, unit) || strings.Contains(got, "system-systemd/") {
			t.Errorf("%s: the layer holds %s, want the file %s", filepath.Base(f), got, unit)
		}
	}
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM windows-hostprocess-scratch\nADD units.tar /\n")
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "--platform", "windows/amd64", "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if err == nil || !strings.Contains(err.Error(), `system-systemd\x2dcryptsetup.slice holds a backslash, which Windows reads as a separator`) {
		t.Errorf("Windows: got %v, want the backslash refused", err)
	}
}
