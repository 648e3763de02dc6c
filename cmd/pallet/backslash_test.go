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

// A path: with a backslash, in an artifact holding both the name with
// the backslash and the path it separates, is refused at its line,
// naming both: the name with the backslash was taken, silently. A licence
// named so is found as a path: is, and refused the same way at licenses.
func TestBackslashPathNamingTwoRefused(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "both.tar"), string(fixture.Tar([]fixture.File{
		{Name: `a\b`, Content: "the name with a backslash", Mode: 0o644},
		{Name: "a/", Dir: true, Mode: 0o755},
		{Name: "a/b", Content: "a/b", Mode: 0o644},
	})))
	writeFile(t, filepath.Join(dir, "one.tar"), string(fixture.Tar([]fixture.File{
		{Name: `a\b`, Content: "the name with a backslash", Mode: 0o644},
		{Name: `doc\LICENSE`, Content: "MIT", Mode: 0o644},
	})))
	recipe := filepath.Join(dir, "pallet.yaml")
	const head = `version: 1
artifacts:
  both:
    local: {path: ./both.tar, extract: {}}
    licenses: none
  one:
    local: {path: ./one.tar, extract: {}}
    licenses:
      - 'doc\LICENSE'
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
`
	writeFile(t, recipe, head+`      - artifact: both
        path: 'a\b'
        dest: /x
`)
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if want := recipe + `:16: image app (linux/amd64): path a\b is ambiguous: the artifact has both a\b, a name holding a backslash, and a/b`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
	// The licence named doc\LICENSE is the file of that name, shipped.
	writeFile(t, recipe, head+`      - {artifact: one, path: 'a\b', dest: /x}
`)
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+out)
	files := readImageFiles(t, out, "linux/amd64")
	if got := files[`LICENSES/one/doc\LICENSE`]; got != "MIT (644)" {
		t.Errorf("the licence shipped: %q, in %v", got, files)
	}
	if got := files["x"]; got != "the name with a backslash (644)" {
		t.Errorf("/x: %q", got)
	}
	// Named where the artifact holds both, it is refused at licenses.
	writeFile(t, filepath.Join(dir, "one.tar"), string(fixture.Tar([]fixture.File{
		{Name: `a\b`, Content: "the name with a backslash", Mode: 0o644},
		{Name: `doc\LICENSE`, Content: "MIT", Mode: 0o644},
		{Name: "doc/", Dir: true, Mode: 0o755},
		{Name: "doc/LICENSE", Content: "Apache", Mode: 0o644},
	})))
	_, err = pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if want := recipe + `:8: `; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `licence path doc\LICENSE is ambiguous: the artifact has both doc\LICENSE, a name holding a backslash, and doc/LICENSE`) {
		t.Errorf("got %v, want it refused at %s naming both", err, want)
	}
}
