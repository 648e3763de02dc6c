package main

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// The messages that name the placement a path of a layer came from name
// the one that put it there (its mark, tree.Entry.PlacedBy), not a guess
// from the destinations: in each recipe here two placements of one
// layer share dest: /k/, the path comes from the second, and the guess
// named the first (of two destinations alike, the first).

// twoIntoK is a recipe of artifacts a and x (a and x, the source line
// of each) placed, a then x, into /k/ of one layer of the image app on
// base and platform; the placements are at lines 14 and 15.
func twoIntoK(base, platform, a, x string) string {
	return fmt.Sprintf(`version: 1
artifacts:
  a:
    %s
    licenses: none
  x:
    %s
    licenses: none
images:
  app:
    base: %s
    platforms: [%s]
    files:
      - {artifact: a, dest: /k/, layer: one}
      - {artifact: x, dest: /k/, layer: one}
`, a, x, base, platform)
}

// saidAtSecond fails t unless msg is said at recipe:15 and names no
// other line of it, 14 the first placement's.
func saidAtSecond(t *testing.T, recipe, msg string) {
	t.Helper()
	if !strings.Contains(msg, recipe+":15:") {
		t.Errorf("not said at %s:15, where x is placed:\n%s", recipe, msg)
	}
	if strings.Contains(msg, recipe+":14") {
		t.Errorf("names %s:14, where a is placed, which put nothing there:\n%s", recipe, msg)
	}
}

// A name a layer cannot hold (the layer writer's entry error), on
// Windows and on Linux, where the tree written is the one placed
// through the base: said at x's line, with x's archive entry.
func TestEntryErrorNamesItsPlacementByMark(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "a\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	for _, tc := range []struct {
		base, platform, entry, want string
	}{
		{"windows-hostprocess-scratch", "windows/amd64", "sub/aux.txt", `k/sub/aux.txt: "aux.txt" is a reserved device name on Windows`},
		{"scratch", "linux/amd64", "sub/.wh.gone", "k/sub/.wh.gone: a name starting with .wh."},
	} {
		writeFile(t, filepath.Join(dir, "x.tar"), string(fixture.Tar([]fixture.File{{Name: tc.entry, Content: "x"}})))
		writeFile(t, recipe, twoIntoK(tc.base, tc.platform, "local: {path: ./a}", "local: {path: ./x.tar, extract: {}}"))
		_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		if err == nil {
			t.Fatalf("%s: built", tc.platform)
		}
		saidAtSecond(t, recipe, err.Error())
		from := "(artifact x: the archive " + filepath.Join(dir, "x.tar") + ", its entry " + tc.entry + ")"
		if !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), from) {
			t.Errorf("%s: got %v\nwant %q and %q", tc.platform, err, tc.want, from)
		}
	}
}

// Two layers' paths that are one on Windows: said at the line of the
// placement that put the later one there, with its archive entry.
func TestCaseCollisionNamesItsPlacementByMark(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "h.txt"), "h\n")
	writeFile(t, filepath.Join(dir, "x.tar"), string(fixture.Tar([]fixture.File{{Name: "app.txt", Content: "x"}})))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  a: {local: {path: ./a}, licenses: none}
  x: {local: {path: ./x.tar, extract: {}}, licenses: none}
  h: {local: {path: ./h.txt}, licenses: none}
images:
  app:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: h, dest: /k/App.txt, layer: zero}
      - {artifact: a, dest: /k/, layer: one}
      - {artifact: x, dest: /k/, layer: one}
`)
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("built")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, recipe+":13: ") || strings.Contains(msg, recipe+":12") {
		t.Errorf("want it said at %s:13, where x is placed, not 12, where a is:\n%s", recipe, msg)
	}
	if want := "/k/app.txt (a file, layer one) are one path on Windows"; !strings.Contains(msg, want) || !strings.HasSuffix(msg, "(artifact x: the archive "+filepath.Join(dir, "x.tar")+", its entry app.txt)") {
		t.Errorf("got %v\nwant %q and x's archive entry", err, want)
	}
}

// A Windows link whose target is nowhere in the image: warned at the
// line of the placement that took it, where link: goes, with its
// archive entry.
func TestUntypedLinkNamesItsPlacementByMark(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "x.tar"), string(fixture.Tar([]fixture.File{{Name: "app/lnk", Link: "../missing"}})))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, twoIntoK("windows-hostprocess-scratch", "windows/amd64", "local: {path: ./a}", "local: {path: ./x.tar, extract: {}}"))
	out := mustPallet(t, "build", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	want := recipe + ":15:9: image app (windows/amd64), layer one: symlink /k/app/lnk -> ../missing: its target is not in the image's layers"
	if !strings.Contains(out, want) || !strings.Contains(out, "(artifact x: the archive "+filepath.Join(dir, "x.tar")+", its entry app/lnk)") {
		t.Errorf("pallet build said:\n%s\nwant a warning starting %q, naming x's archive entry", out, want)
	}
	if strings.Contains(out, recipe+":14") {
		t.Errorf("names %s:14, where a is placed:\n%s", recipe, out)
	}
}

// A directory written where a Windows base holds a link, which Windows
// would replace: said at the line of the placement that put it there.
func TestWindowsBaseClashNamesItsPlacementByMark(t *testing.T) {
	dir := t.TempDir()
	d := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755} }
	windowsBaseOf(t, filepath.Join(dir, "base"), rawTar(t, d("Files/"), d("Files/k/"), d("Files/k/real/"),
		&tar.Header{Name: "Files/k/sub", Typeflag: tar.TypeSymlink, Linkname: `C:\k\real`, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "1040"}}))
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "x", "sub", "y"), "y\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, twoIntoK("oci:base", "windows/amd64", "local: {path: ./a}", "local: {path: ./x}"))
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("built")
	}
	if want := `/k/sub would be written as a directory where the base oci:base holds the link /k/sub -> C:\k\real`; !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q", err, want)
	}
	saidAtSecond(t, recipe, err.Error())
}

// A directory a Dockerfile's COPY copies where the base holds a link:
// said at the source that holds it, the second of the COPY's, on a line
// of its own.
func TestDirectoryAtBaseLinkNamesItsSourceByMark(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root", "k", "usr", "bin", "sh"), "#!shell\n")
	if err := os.Symlink("usr/bin", filepath.Join(dir, "root", "k", "bin")); err != nil {
		t.Fatal(err)
	}
	dfBase(t, dir)
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "r", "bin", "y"), "y\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY a/ \\\n  r/ /k/\n")
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if err == nil {
		t.Fatal("built")
	}
	df := filepath.Join(dir, "Dockerfile")
	if want := "/k/bin: a directory copied where the image holds a link (to usr/bin)"; !strings.HasPrefix(err.Error(), df+":3: ") || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant it said at %s:3, r/'s line, with %q", err, df, want)
	}
}
