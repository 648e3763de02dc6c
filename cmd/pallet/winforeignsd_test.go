package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A file placed into C:\Windows\System32 on a base whose System32 is in
// a foreign layer (never read) makes the layer list System32 again with
// pallet's descriptor, which Users may add files under: the build says
// so at the placement, once per directory. Where the base's directory is
// read (its descriptor kept), or nothing goes under a system directory,
// it says nothing.
func TestWindowsForeignSystemDirWarns(t *testing.T) {
	dir := t.TempDir()
	windowsBase(t, filepath.Join(dir, "nano"), "10.0.20348.2582")
	hostProcessLikeBase(t, filepath.Join(dir, "hpc"))
	writeFile(t, filepath.Join(dir, "a.dll"), "a\n")
	writeFile(t, filepath.Join(dir, "b.dll"), "b\n")
	recipe := func(base string, dests ...string) string {
		s := "version: 1\nartifacts:\n  a:\n    local: {path: a.dll}\n    licenses: none\n  b:\n    local: {path: b.dll}\n    licenses: none\nimages:\n  app:\n    base: " + base + "\n    platforms: [windows/amd64]\n    files:\n"
		for i, d := range dests {
			s += "      - {artifact: " + string(rune('a'+i)) + ", dest: " + d + "}\n"
		}
		return s
	}
	build := func(r string) string {
		t.Helper()
		writeFile(t, filepath.Join(dir, "pallet.yaml"), r)
		return mustPallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	}
	log := build(recipe("oci:nano", "/app/", "/windows/system32/drivers/"))
	if n := strings.Count(log, "lists /Windows, /Windows/System32, /Windows/System32/drivers again"); n != 1 || !strings.Contains(log, "pallet.yaml:15:9: image app (windows/amd64), layer 1-b") || !strings.Contains(log, "foreign layer") {
		t.Errorf("want one warning at the second placement's line about System32\\drivers, got:\n%s", log)
	}
	log = build(recipe("oci:nano", "/Windows/System32/", "/WINDOWS/SYSTEM32/"))
	if n := strings.Count(log, "again, with pallet's descriptor"); n != 1 || !strings.Contains(log, "pallet.yaml:14:9: image app (windows/amd64), layer 0-a: the layer lists /Windows, /Windows/System32 again") {
		t.Errorf("want one warning for the two placements into System32, at the first's line, got:\n%s", log)
	}
	for _, r := range []string{recipe("oci:nano", "/app/", "/app/lib/"), recipe("oci:hpc", "/Windows/System32/")} {
		if log := build(r); strings.Contains(log, "again, with pallet's descriptor") {
			t.Errorf("a warning for\n%s\ngot:\n%s", r, log)
		}
	}
}
