package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A dest written with backslashes, as a Windows user writes one
// (docs/recipe.md: a path you write takes \ as a separator), places as
// the same dest written with slashes: a trailing \ places into the
// directory, where it renamed the one file to the directory's name (and
// two such placements collided), and a leading \ is the image's root,
// where it was refused as not absolute. On Linux too.
func TestDestBackslashesAreSeparators(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "b.txt"), "b\n")
	recipe := func(win, lin []string) string {
		return `version: 1
artifacts:
  a: {local: {path: ./a.txt}, licenses: none}
  b: {local: {path: ./b.txt}, licenses: none}
images:
  app:
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: a, dest: '` + win[0] + `', platforms: [windows]}
      - {artifact: b, dest: '` + win[1] + `', platforms: [windows]}
      - {artifact: b, dest: '` + win[2] + `', platforms: [windows]}
      - {artifact: a, dest: '` + lin[0] + `', platforms: [linux]}
      - {artifact: b, dest: '` + lin[1] + `', platforms: [linux]}
`
	}
	slashes := filepath.Join(dir, "slashes.yaml")
	writeFile(t, slashes, recipe([]string{`/k/antrea/bin/`, `/k/antrea/bin/`, `/k/antrea/cni/b.exe`}, []string{`/opt/tool/`, `/opt/tool/c.txt`}))
	backslashes := filepath.Join(dir, "backslashes.yaml")
	writeFile(t, backslashes, recipe([]string{`\k\antrea\bin\`, `/k\antrea\bin\`, `\k\antrea\cni\b.exe`}, []string{`/opt\tool\`, `\opt\tool\c.txt`}))

	want := strings.TrimSpace(mustPallet(t, "build", "-q", "--no-cache", "-f", slashes, "-o", "oci:"+filepath.Join(t.TempDir(), "o")))
	out := filepath.Join(t.TempDir(), "o")
	got := strings.TrimSpace(mustPallet(t, "build", "-q", "--no-cache", "-f", backslashes, "-o", "oci:"+out))
	if got != want {
		t.Errorf("written with backslashes: %s, want %s, as with slashes", got, want)
	}
	if names := layerNames(t, layoutImage(t, out, "windows/amd64"), 1); strings.Join(names, "|") != "Files/k/antrea/bin/a.txt|Files/k/antrea/bin/b.txt|Files/k/antrea/cni/b.exe" {
		t.Errorf("Windows layers hold %q", names)
	}
	if names := layerNames(t, layoutImage(t, out, "linux/amd64"), 0); strings.Join(names, "|") != "opt/tool/a.txt|opt/tool/c.txt" {
		t.Errorf("Linux layers hold %q", names)
	}
}
