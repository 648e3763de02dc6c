package main

import (
	"archive/tar"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A Windows image pallet built is a base pallet builds on, as the
// Windows importer takes it (the base's view is read as hcsshim applies
// its layers, and a base it would fail on refused): two and three
// builds deep, with files replaced by later layers under names spelled
// in another case (each layer keeps its recipe's spelling: NTFS merges
// the directories), and the bases' views read from the cache the
// second time.
func TestWindowsBaseBuiltByPallet(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "app", "B.txt"), "b\n")
	writeFile(t, filepath.Join(dir, "more", "m.txt"), "m\n")
	recipe := func(name, base, app, more string) string {
		p := filepath.Join(dir, name+".yaml")
		s := "version: 1\nartifacts:\n  app:\n    local: {path: app}\n  more:\n    local: {path: more}\nimages:\n  " + name + ":\n    base: " + base +
			"\n    platforms: [windows/amd64]\n    files:\n      - {artifact: app, dest: " + app + ", layer: a}\n      - {artifact: more, dest: " + more + ", layer: b}\n"
		writeFile(t, p, s)
		return p
	}
	builds := []struct {
		recipe string
		want   []string
	}{
		{recipe("one", "windows-hostprocess-scratch", "/app/", "/Program Files/App/"), []string{"Files/app/B.txt Files/app/a.txt", "Files/Program Files/App/m.txt"}},
		{recipe("two", "oci:one", "/APP/", "/program files/APP/"), []string{"Files/APP/B.txt Files/APP/a.txt", "Files/program files/APP/m.txt"}},
		{recipe("three", "oci:two", "/App/sub/", "/PROGRAM FILES/app/"), []string{"Files/App/sub/B.txt Files/App/sub/a.txt", "Files/PROGRAM FILES/app/m.txt"}},
	}
	for range 2 {
		for i, b := range builds {
			out := filepath.Join(dir, []string{"one", "two", "three"}[i])
			mustPallet(t, "build", "-q", "-f", b.recipe, "-o", "oci:"+out)
			checkWindowsLayout(t, out, "")
			img := dfImage(t, out)
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != 3+2*i {
				t.Fatalf("build %d: %d layers, want %d", i+1, len(layers), 3+2*i)
			}
			if got := layerNames(t, img, len(layers)-2); !slices.Equal(got, b.want) {
				t.Errorf("build %d: its layers hold\n %q\nwant\n %q", i+1, got, b.want)
			}
		}
	}
}

// A Windows base whose files carry alternate data streams, as Docker on
// Windows exports a downloaded file (its Zone.Identifier an entry named
// file:stream right after the file's), is built on, the streams taken
// for part of their files: it was refused for the ':'.
func TestWindowsBaseWithAlternateDataStreams(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	windowsBaseOf(t, filepath.Join(dir, "base"), rawTar(t,
		&tar.Header{Name: "Files/", Typeflag: tar.TypeDir}, &tar.Header{Name: "Files/tools/", Typeflag: tar.TypeDir},
		&tar.Header{Name: "Files/tools/setup.exe", Typeflag: tar.TypeReg, Size: 4},
		&tar.Header{Name: "Files/tools/setup.exe:Zone.Identifier", Typeflag: tar.TypeReg, Size: 26},
		&tar.Header{Name: "Hives/", Typeflag: tar.TypeDir}))
	writeFile(t, filepath.Join(dir, "pallet.yaml"), "version: 1\nartifacts:\n  f:\n    local: {path: f.txt}\n    licenses: none\nimages:\n  app:\n    base: oci:base\n    platforms: [windows/amd64]\n    files:\n      - {artifact: f, dest: /tools/}\n")
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	// The base's layer held to what the importer takes, streams and all.
	checkWindowsLayoutOnBase(t, out, 1, "")
	if got := layerNames(t, dfImage(t, out), 1); !slices.Equal(got, []string{"Files/tools/f.txt"}) {
		t.Errorf("layers hold %q", got)
	}
	// A file placed where the base's file is, whatever its streams, is
	// refused as any file over a file is not: it replaces it.
	writeFile(t, filepath.Join(dir, "pallet.yaml"), "version: 1\nartifacts:\n  f:\n    local: {path: f.txt}\n    licenses: none\nimages:\n  app:\n    base: oci:base\n    platforms: [windows/amd64]\n    files:\n      - {artifact: f, dest: /tools/setup.exe/}\n")
	if _, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out2")); err == nil || !strings.Contains(err.Error(), "setup.exe") {
		t.Errorf("a directory over the base's file: %v", err)
	}
}
