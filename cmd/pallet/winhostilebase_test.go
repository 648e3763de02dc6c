package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/image"
)

// winBaseRecipe places app on the Windows base oci:base (line 8).
const winBaseRecipe = `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: oci:base
    platforms: [windows/amd64]
    files:
      - {artifact: app, dest: /App/}
`

// winBaseFirst is a Windows base's first layer as Windows exports one:
// each parent listed before what it holds.
func winBaseFirst() []*tar.Header {
	return []*tar.Header{
		{Name: "Files/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "Files/app/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "Files/app/tool.exe", Typeflag: tar.TypeReg, Size: 2},
		{Name: "Files/lnk", Typeflag: tar.TypeSymlink, Linkname: `app`},
		{Name: "Hives/", Typeflag: tar.TypeDir, Mode: 0o755},
	}
}

// winBaseAbove is a layer above a Windows base's first, of hdrs.
func winBaseAbove(hdrs ...*tar.Header) []*tar.Header {
	return append([]*tar.Header{{Name: "Hives/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "Files/", Typeflag: tar.TypeDir, Mode: 0o755}}, hdrs...)
}

// A Windows base that hcsshim's importer (which containerd on Windows
// runs) fails to import, or imports into other files than its view
// would say, fails the build at the base's line, naming the base, the
// layer and the entry, and writes no output; a second build on the same
// cache says the same. Each was built before: hard links and whiteouts
// were read as a Linux base's, other names as written, and the image
// failed where it was pulled, or (an opaque whiteout) held on Windows
// what pallet's view said it did not.
func TestHostileWindowsBaseLayersRefused(t *testing.T) {
	reg := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeReg} }
	dir := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755} }
	hard := func(n, to string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeLink, Linkname: to} }
	for _, c := range []struct {
		name   string
		layers [][]*tar.Header
		want   string
	}{
		{"a hard link to nothing", [][]*tar.Header{winBaseFirst(), winBaseAbove(hard("Files/h.exe", "Files/app/gone.exe"))},
			`entry "Files/h.exe": a hard link to Files/app/gone.exe, which no earlier entry or lower layer holds`},
		{"a hard link to a directory", [][]*tar.Header{append(winBaseFirst(), hard("Files/h", "Files/app"))},
			`entry "Files/h": a hard link to the directory Files/app, which NTFS cannot make`},
		{"a hard link outside Files/", [][]*tar.Header{winBaseFirst(), winBaseAbove(hard("Files/h.exe", "app/tool.exe"))},
			`entry "Files/h.exe": a hard link to app/tool.exe: above the image's first layer, hcsshim links only within Files/`},
		{"a whiteout in the first layer", [][]*tar.Header{append(winBaseFirst(), reg("Files/.wh.gone"))},
			`entry "Files/.wh.gone": a whiteout in the image's first layer`},
		{"an opaque whiteout", [][]*tar.Header{winBaseFirst(), winBaseAbove(dir("Files/app/"), reg("Files/app/.wh..wh..opq"))},
			`entry "Files/app/.wh..wh..opq": an opaque whiteout, which the Windows importer does not apply`},
		{"a whiteout of the parent", [][]*tar.Header{winBaseFirst(), winBaseAbove(dir("Files/app/"), reg("Files/app/.wh..."))},
			`entry "Files/app/.wh...": a whiteout of "..", which names no entry of its directory`},
		{"a stream's name", [][]*tar.Header{append(winBaseFirst(), reg("Files/app/tool.exe:ads"))},
			`entry "Files/app/tool.exe:ads": "tool.exe:ads" contains ':'`},
		{"a name NTFS refuses", [][]*tar.Header{append(winBaseFirst(), reg("Files/app/a*b.log"))},
			`entry "Files/app/a*b.log": "a*b.log" contains '*'`},
		{"a Linux layer", [][]*tar.Header{winBaseFirst(), {dir("usr/"), dir("usr/bin/"), reg("usr/bin/sh")}},
			`entry "usr/": usr is outside Files/, Hives/ and UtilityVM/`},
		{"names one without case", [][]*tar.Header{append(winBaseFirst(), reg("Files/APP/TOOL.EXE"))},
			`entry "Files/APP/TOOL.EXE": a second entry for Files/APP/TOOL.EXE in one layer (names compared without case, as NTFS does: Files/app/tool.exe)`},
		{"a parent not listed", [][]*tar.Header{winBaseFirst(), winBaseAbove(reg("Files/app/new.exe"))},
			`entry "Files/app/new.exe": its parent Files/app is no directory listed before it in this layer`},
		{"an entry through a link", [][]*tar.Header{append(winBaseFirst(), reg("Files/lnk/x.exe"))},
			`entry "Files/lnk/x.exe": its parent Files/lnk is a link of this layer: the Windows importer does not write through links`},
		{"a name above the root", [][]*tar.Header{append(winBaseFirst(), reg("Files/../../x.exe"))},
			`entry "Files/../../x.exe": a name above the layer's root`},
		{"a hard link named ./Files/", [][]*tar.Header{winBaseFirst(), winBaseAbove(hard("./Files/h.exe", "Files/app/tool.exe"))},
			`entry "./Files/h.exe": a hard link named ./Files/h.exe: above the image's first layer, hcsshim links only names under Files/ or UtilityVM/Files/`},
		{"a utility VM above a first layer without one", [][]*tar.Header{winBaseFirst(), winBaseAbove(&tar.Header{Name: "UtilityVM", Typeflag: tar.TypeDir, Mode: 0o755})},
			`entry "UtilityVM": the entry "UtilityVM" makes the Windows importer clone the utility VM of the layer right below into this one (initUtilityVM), and that layer holds no UtilityVM/Files`},
		{"a hard link into the utility VM of a layer that has none", [][]*tar.Header{append(winBaseFirst(), dir("UtilityVM/"), dir("UtilityVM/Files/"), reg("UtilityVM/Files/x.exe")),
			winBaseAbove(hard("Files/h.exe", "UtilityVM/Files/x.exe"))},
			`entry "Files/h.exe": a hard link to UtilityVM/Files/x.exe: above the first layer, hcsshim looks for a target under UtilityVM/Files/ in the layer's own utility VM only`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			var blobs [][]byte
			for _, l := range c.layers {
				blobs = append(blobs, rawTar(t, l...))
			}
			digests := windowsLayeredBase(t, filepath.Join(d, "base"), blobs)
			writeFile(t, filepath.Join(d, "app"), "app\n")
			writeFile(t, filepath.Join(d, "pallet.yaml"), winBaseRecipe)
			cache := filepath.Join(d, "cache")
			n := len(c.layers)
			for range 2 {
				out := filepath.Join(d, "out")
				_, err := pallet(t, "build", "-f", filepath.Join(d, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
				for _, want := range []string{"pallet.yaml:8: image app (windows/amd64): base oci:base", fmt.Sprintf("base layer %d (%s)", n, digests[n-1]), c.want} {
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

// What the importer accepts builds, read as Windows holds it: hard links
// named with Files/, a whiteout above the first layer, and names one
// whatever their case across layers: a later layer's directory replaces
// a file spelled otherwise, and its file a directory. The view held both
// spellings, each as written: a placement into the directory was refused
// as one over the file, and one into what Windows holds as a file was
// built.
func TestWindowsBaseAsImported(t *testing.T) {
	d := t.TempDir()
	reg := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeReg} }
	dir := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755} }
	hard := func(n, to string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeLink, Linkname: to} }
	windowsLayeredBase(t, filepath.Join(d, "base"), [][]byte{
		rawTar(t, append(winBaseFirst(), hard("Files/tool2.exe", "Files/APP/TOOL.EXE"), reg("Files/app/old.txt"),
			dir("Files/cfg/"), reg("Files/cfg/a.txt"), reg("Files/data"))...),
		rawTar(t, winBaseAbove(dir("Files/APP/"), reg("Files/APP/.wh.old.txt"), hard("Files/APP/tool3.exe", "Files/tool2.exe"),
			reg("Files/CFG"), dir("Files/DATA/"))...),
	})
	writeFile(t, filepath.Join(d, "app"), "app\n")
	recipe := func(from, dest string) {
		writeFile(t, filepath.Join(d, "pallet.yaml"), strings.NewReplacer("local: {path: app}", "local: {path: "+from+"}", "dest: /App/", "dest: "+dest).Replace(winBaseRecipe))
	}
	cache := filepath.Join(d, "cache")
	recipe("app", "/Data/")
	for range 2 {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(d, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
		checkWindowsLayoutOnBase(t, out, 2, "")
		if got := layerNames(t, dfImage(t, out), 2); !slices.Equal(got, []string{"Files/Data/app"}) {
			t.Errorf("pallet's layer holds %q", got)
		}
	}
	for _, c := range []struct{ from, dest, want string }{
		{"app", "/Cfg/", "/Cfg would be a directory where the base oci:base holds a file"},
		{"tree", "/app/", "/app/tool3.exe would be a directory where the base oci:base holds a file"},
	} {
		writeFile(t, filepath.Join(d, "tree", "tool3.exe", "x"), "x\n")
		recipe(c.from, c.dest)
		if _, err := pallet(t, "build", "-q", "-f", filepath.Join(d, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s at %s: got %v, want %q", c.from, c.dest, err, c.want)
		}
	}
}

// A Windows base's view cached by a pallet that took what it now refuses
// (under base-view-windows-v4: a utility VM above a layer with none, a
// hard link's name read cleaned, a target in the utility VM unchecked)
// is not taken from the cache: the base is read again and refused. With
// the old fact kept, the stored view was taken and the image built.
func TestWindowsBaseViewCachedBeforeIsReadAgain(t *testing.T) {
	d := t.TempDir()
	windowsLayeredBase(t, filepath.Join(d, "base"), [][]byte{
		rawTar(t, winBaseFirst()...),
		rawTar(t, winBaseAbove(&tar.Header{Name: "UtilityVM", Typeflag: tar.TypeDir, Mode: 0o755})...),
	})
	writeFile(t, filepath.Join(d, "app"), "app\n")
	writeFile(t, filepath.Join(d, "pallet.yaml"), winBaseRecipe)
	key, err := image.ViewKey(dfImage(t, filepath.Join(d, "base")))
	if err != nil {
		t.Fatal(err)
	}
	// The view an earlier pallet kept of it: the app directory, as the
	// cache encodes it (its body's sha256, then a line a path).
	body := `D 2147484141 0 0 "app"` + "\n" + `F "app/tool.exe"`
	sum := sha256.Sum256([]byte(body))
	cache := filepath.Join(d, "cache")
	build := func() error {
		_, err := pallet(t, "build", "-f", filepath.Join(d, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+filepath.Join(d, "out"))
		return err
	}
	const want = `entry "UtilityVM": the entry "UtilityVM" makes the Windows importer clone`
	// The first build makes the cache pallet's.
	if err := build(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
	writeFile(t, filepath.Join(cache, "facts", "base-view-windows-v4", key[:2], key), hex.EncodeToString(sum[:])+"\n"+body)
	if err := build(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("with the view an earlier pallet cached: err = %v, want it to say %q", err, want)
	}
}
