package image

import (
	"archive/tar"
	"bytes"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A Windows base's view is what its layers hold under Files/, without
// the prefix; Hives/ and the rest are left out, and foreign layers are
// counted, not read.
func TestWindowsBaseView(t *testing.T) {
	img := imageOf(t, tarLayer(t, "Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/config/", "Files/Windows/System32/config/SAM",
		"Hives/", "Hives/DefaultUser_Delta", "UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/x", "Files/License/", "Files/License/NOTICE"))
	v, err := WindowsBaseView(img, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	dirs := slices.Sorted(func(yield func(string) bool) {
		for p := range v.Dirs {
			if !yield(p) {
				return
			}
		}
	})
	files := slices.Sorted(func(yield func(string) bool) {
		for p := range v.Files {
			if !yield(p) {
				return
			}
		}
	})
	if want := []string{"License", "Windows", "Windows/System32", "Windows/System32/config"}; !reflect.DeepEqual(dirs, want) {
		t.Errorf("dirs %q, want %q", dirs, want)
	}
	if want := []string{"License/NOTICE", "Windows/System32/config/SAM"}; !reflect.DeepEqual(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if n := ForeignLayers(img); n != 0 {
		t.Errorf("foreign layers %d", n)
	}

	foreign := static.NewLayer([]byte("foreign"), types.DockerForeignLayer)
	img, err = mutate.Append(img, mutate.Addendum{Layer: foreign, MediaType: types.DockerForeignLayer, URLs: []string{"https://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = WindowsBaseView(img, 1<<20, 0); err != nil || ForeignLayers(img) != 1 {
		t.Errorf("with a foreign layer: %d foreign layers, %v", ForeignLayers(img), err)
	}
}

// winLower is the first layer of the Windows bases below: a base layer
// as Windows exports one, every parent listed before what it holds.
func winLower(t *testing.T) []string {
	return []string{"Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/cmd.exe",
		"Files/app/", "Files/app/a.txt", `Files/lnk->Windows`, "Hives/", "Hives/System_Delta"}
}

// layerOfHeaders is an uncompressed layer of hdrs, as written (PAX
// records, attributes), without contents.
func layerOfHeaders(t *testing.T, hdrs ...tar.Header) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return layerOf(t, buf.Bytes(), types.OCIUncompressedLayer)
}

// sortedKeys lists a view map's paths in order.
func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A Windows base is refused, naming its layer and entry, where hcsshim's
// importer (ociwclayer.ImportLayerFromTar, as containerd on Windows
// calls it) fails on it, or where what Windows would hold differs from
// what the view could say: the image built on it would fail where it is
// pulled, or its layers be placed by a view of other files. Before,
// hard links and whiteouts were taken as a Linux base's, every other
// name as written.
func TestWindowsBaseViewRefusesWhatTheImporterFails(t *testing.T) {
	upper := func(entries ...string) []string { return append([]string{"Hives/", "Files/"}, entries...) }
	for _, c := range []struct {
		name   string
		layers [][]string
		want   string
	}{
		{"a whiteout in the first layer", [][]string{append(winLower(t), "Files/.wh.gone")}, "base layer 1 (sha256:"},
		{"a whiteout in the first layer", [][]string{append(winLower(t), "Files/.wh.gone")}, `entry "Files/.wh.gone": a whiteout in the image's first layer, which Windows imports as a base layer: hcsshim refuses it (base layer cannot have tombstones)`},
		{"an opaque whiteout", [][]string{winLower(t), upper("Files/app/", "Files/app/.wh..wh..opq")}, "an opaque whiteout, which the Windows importer does not apply"},
		{"a whiteout of ..", [][]string{winLower(t), upper("Files/app/.wh...")}, `a whiteout of "..", which names no entry of its directory`},
		{"a whiteout of nothing", [][]string{winLower(t), upper("Files/app/.wh.")}, `a whiteout of "", which names no entry`},
		{"a whiteout of a hive", [][]string{winLower(t), upper("Hives/.wh.System_Delta")}, "a whiteout of Hives/System_Delta, which is not under Files/ (so spelled): hcsshim refuses it (invalid tombstone)"},
		{"a whiteout under files/", [][]string{winLower(t), upper("files/.wh.app")}, "a whiteout of files/app, which is not under Files/"},
		{"a whiteout of what the layer adds", [][]string{winLower(t), upper("Files/new", "Files/.wh.NEW")}, "a whiteout of Files/new, which this layer holds"},
		{"what the layer adds after whiting it out", [][]string{winLower(t), upper("Files/.wh.app", "Files/app/")}, "Files/app is whited out by this layer too"},
		{"a hard link to nothing, first layer", [][]string{append(winLower(t), "Files/h=>Files/app/b.txt")}, "a hard link to Files/app/b.txt, which no earlier entry of the layer holds"},
		{"a hard link to nothing", [][]string{winLower(t), upper("Files/h=>Files/app/b.txt")}, "a hard link to Files/app/b.txt, which no earlier entry or lower layer holds: the Windows importer fails (failed to find link target)"},
		{"a hard link to what a whiteout removed", [][]string{winLower(t), upper("Files/app/", "Files/app/.wh.a.txt"), upper("Files/h=>Files/app/a.txt")}, "which no earlier entry or lower layer holds"},
		{"a hard link to a directory", [][]string{winLower(t), upper("Files/h=>Files/APP")}, "a hard link to the directory Files/APP, which NTFS cannot make"},
		{"a hard link to a directory, first layer", [][]string{append(winLower(t), "Files/h=>Files/Windows")}, "a hard link to the directory Files/Windows"},
		{"a hard link to a link", [][]string{winLower(t), upper("Files/h=>Files/lnk")}, "a hard link to the link Files/lnk, which hcsshim opens without following links"},
		{"a hard link named without Files/", [][]string{winLower(t), upper("Files/h=>app/a.txt")}, "a hard link to app/a.txt: above the image's first layer, hcsshim links only within Files/ or UtilityVM/Files/"},
		{"a hard link to files/", [][]string{winLower(t), upper("Files/h=>files/app/a.txt")}, "invalid hard link in layer"},
		{"a hard link named ./Files/", [][]string{winLower(t), upper("./Files/h=>Files/app/a.txt")}, "a hard link named ./Files/h: above the image's first layer, hcsshim links only names under Files/ or UtilityVM/Files/, so spelled and compared as written, not cleaned (invalid hard link in layer)"},
		{"a hard link to a link's unclean name", [][]string{winLower(t), upper("Files/./h=>Files/app/a.txt", "Files/h2=>Files/h")}, "a hard link to Files/h, which this layer spells Files/h, and no lower layer holds"},
		{"a hard link to the layer's own file, spelled otherwise", [][]string{winLower(t), upper("Files/b.txt", "Files/h=>Files/B.TXT")}, "a hard link to Files/B.TXT, which this layer spells Files/b.txt, and no lower layer holds: hcsshim finds a target of the same layer by its exact name only, and else in lower layers (failed to find link target)"},
		{"a hard link to what a lower layer held, a directory, this layer's file now", [][]string{winLower(t), upper("Files/APP", "Files/h=>Files/app")}, "a hard link to the directory Files/app"},
		{"a stream's colon", [][]string{append(winLower(t), "Files/a:b")}, `"a:b" contains ':', which Windows file names cannot`},
		{"a wildcard", [][]string{append(winLower(t), "Files/a?")}, `"a?" contains '?'`},
		{"a control character", [][]string{append(winLower(t), "Files/a\x01")}, "contains a control character"},
		{"an absolute name", [][]string{append(winLower(t), "/Files/x")}, "an absolute name, which the Windows importer refuses"},
		{"a name above the root", [][]string{append(winLower(t), "Files/../../x")}, "a name above the layer's root"},
		{"a Linux layer's name", [][]string{append(winLower(t), "etc/", "etc/passwd")}, `entry "etc/": etc is outside Files/, Hives/ and UtilityVM/`},
		{"the root", [][]string{append(winLower(t), "./")}, "a name for the layer's root"},
		{"a name twice", [][]string{append(winLower(t), "Files/app/A.TXT")}, "a second entry for Files/app/A.TXT in one layer (names compared without case, as NTFS does: Files/app/a.txt)"},
		{"a directory twice", [][]string{append(winLower(t), "Files/app/")}, "a second entry for Files/app in one layer"},
		{"a parent not listed", [][]string{append(winLower(t), "Files/new/x")}, "its parent Files/new is no directory listed before it in this layer"},
		{"a parent listed by a lower layer only", [][]string{winLower(t), upper("Files/app/b.txt")}, "its parent Files/app is no directory listed before it in this layer"},
		{"an entry through a link", [][]string{append(winLower(t), "Files/lnk/x")}, "its parent Files/lnk is a link of this layer: the Windows importer does not write through links"},
		{"an entry under a file", [][]string{append(winLower(t), "Files/app/a.txt/x")}, "its parent Files/app/a.txt is a file of this layer"},
		{"a link to nothing", [][]string{append(winLower(t), "Files/empty->")}, "a symbolic link with no target"},
	} {
		var layers []v1.Layer
		for _, l := range c.layers {
			layers = append(layers, tarLayer(t, l...))
		}
		_, err := WindowsBaseView(imageOf(t, layers...), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "base layer ") {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// What hcsshim's importer accepts, the view holds as Windows does: a
// hard link's target is named with Files/, a whiteout above the first
// layer hides what is below, names are one whatever their case across
// layers (a directory keeps the first spelling, which later ones merge
// into), '\' separates, and a hard link's target is cleaned
// ("./Files/x" is Files/x), as the legacy writer's AddLink cleans it.
func TestWindowsBaseViewAsImported(t *testing.T) {
	upper := func(entries ...string) v1.Layer {
		return tarLayer(t, append([]string{"Hives/", "Files/"}, entries...)...)
	}
	img := imageOf(t, tarLayer(t, append(winLower(t), "Files/Windows/System32/CMD2.EXE=>Files/windows/system32/CMD.EXE", "Hives/h=>Hives/System_Delta", "UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/x")...),
		upper("Files/app/", "Files/app/.wh.a.txt", "Files/h=>Files/Windows/System32/cmd.exe"),
		upper("Files/APP/", "Files/APP/B.TXT", `Files\APP\c.txt`, "Files/app/../d.txt", "Files/WINDOWS/", "Files/WINDOWS/.wh.system32", "Files/LNK/"),
		upper("Files/h2=>Files/H", "Files/h3=>./Files/app/../H", `Files\h4=>Files\h3`))
	v, err := WindowsBaseView(img, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(v.Dirs), []string{"LNK", "Windows", "app"}; !slices.Equal(got, want) {
		t.Errorf("dirs %q, want %q", got, want)
	}
	if got, want := sortedKeys(v.Files), []string{"app/B.TXT", "app/c.txt", "d.txt", "h", "h2", "h3", "h4"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if len(v.Links) != 0 {
		t.Errorf("links %q: LNK, a directory, replaced lnk", v.Links)
	}
}

// A hard link above the first layer to a name this layer did not add so
// spelled is looked for in the lower layers (legacyLayerWriter.AddLink:
// addedFiles by exact name, then LstatRelative in each parent layer's
// directory, without case), as they were when the layer started: one
// this layer replaced under another spelling, or whites out, or whose
// directory it replaced with a file, is linked to the lower layer's file.
// Each was refused.
func TestWindowsBaseViewHardLinkBelowThisLayer(t *testing.T) {
	upper := func(entries ...string) v1.Layer {
		return tarLayer(t, append([]string{"Hives/", "Files/"}, entries...)...)
	}
	for _, c := range []struct {
		name  string
		upper v1.Layer
		files []string
	}{
		{"replaced in another case", upper("Files/app/", "Files/app/A.TXT", "Files/h=>Files/app/a.txt"), []string{"Windows/System32/cmd.exe", "app/A.TXT", "h"}},
		{"whited out", upper("Files/app/", "Files/app/.wh.a.txt", "Files/h=>Files/app/a.txt"), []string{"Windows/System32/cmd.exe", "h"}},
		{"under a directory replaced by a file", upper("Files/APP", "Files/h=>Files/app/a.txt"), []string{"APP", "Windows/System32/cmd.exe", "h"}},
	} {
		v, err := WindowsBaseView(imageOf(t, tarLayer(t, winLower(t)...), c.upper), 1<<30, 0)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := sortedKeys(v.Files); !slices.Equal(got, c.files) {
			t.Errorf("%s: files %q, want %q", c.name, got, c.files)
		}
	}
}

// A layer above the first holds a utility VM only once it lists the
// entry UtilityVM, so spelled: hcsshim's legacy writer then clones the
// one of the layer right below (initUtilityVM), which must hold one, and
// writes the layer's entries under UtilityVM/Files/ into it; a whiteout
// there calls it too and removes at once what must be there; a hard
// link's target under UtilityVM/Files/ is looked for in that clone only.
// Into that clone, an entry's parent may be the clone's and a later
// entry replaces an earlier. Each refusal was accepted: the targets, and
// whether there was a utility VM below, were not checked; the first
// acceptance was refused, its entries' parents not listed in the layer,
// a name twice.
func TestWindowsBaseViewUtilityVM(t *testing.T) {
	dir := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
	file := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644} }
	link := func(name, target string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}
	}
	top := []tar.Header{dir("Hives"), dir("Files")}
	upper := func(hdrs ...tar.Header) v1.Layer { return layerOfHeaders(t, append(slices.Clone(top), hdrs...)...) }
	withUVM := tarLayer(t, append(winLower(t), "UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/x", "UtilityVM/Files/d/", "UtilityVM/Files/d/y",
		"UtilityVM/Files/cmd.exe=>Files/Windows/System32/cmd.exe")...)
	noUVM := tarLayer(t, winLower(t)...)
	uvm := dir("UtilityVM")

	second := upper(uvm, dir("UtilityVM/Files"), file("UtilityVM/Files/new"), file("UtilityVM/Files/d/z"), file("UtilityVM/Files/d/z"), file("UtilityVM/Files/f"), dir("UtilityVM/Files/f"), link("UtilityVM/Files/new2", "UtilityVM/Files/new"),
		tar.Header{Name: "UtilityVM/Files/d/.wh.y", Typeflag: tar.TypeReg}, link("Files/u", "UtilityVM/Files/x"), link("Files/u2", "UtilityVM/Files/CMD.EXE"))
	third := upper(uvm, link("Files/v", "UtilityVM/Files/new2"))
	v, err := WindowsBaseView(imageOf(t, withUVM, second, third), 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(v.Files), []string{"Windows/System32/cmd.exe", "app/a.txt", "u", "u2", "v"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	foreign := static.NewLayer([]byte("foreign"), types.DockerForeignLayer)
	img, err := mutate.Append(imageOf(t), mutate.Addendum{Layer: foreign, MediaType: types.DockerForeignLayer, URLs: []string{"https://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, upper(uvm, link("Files/u", "UtilityVM/Files/x"))); err != nil {
		t.Fatal(err)
	}
	if _, err := WindowsBaseView(img, 1<<30, 0); err != nil {
		t.Errorf("above a foreign layer, whose utility VM is not known: %v", err)
	}

	for _, c := range []struct {
		name   string
		layers []v1.Layer
		want   string
	}{
		{"UtilityVM over a first layer without one", []v1.Layer{noUVM, upper(uvm)},
			`base layer 2 (sha256:`},
		{"UtilityVM over a first layer without one", []v1.Layer{noUVM, upper(uvm)},
			`entry "UtilityVM": the entry "UtilityVM" makes the Windows importer clone the utility VM of the layer right below into this one (initUtilityVM), and that layer holds no UtilityVM/Files: the import fails (cloning the parent utility VM image failed)`},
		{"UtilityVM over a layer without one", []v1.Layer{withUVM, upper(file("Files/f")), upper(uvm)}, "base layer 3 (sha256:"},
		{"UtilityVM over a layer without one", []v1.Layer{withUVM, upper(file("Files/f")), upper(uvm)}, "that layer holds no UtilityVM/Files"},
		{"a whiteout under UtilityVM over a layer without one", []v1.Layer{noUVM, upper(tar.Header{Name: "UtilityVM/Files/.wh.x", Typeflag: tar.TypeReg})},
			"a whiteout of UtilityVM/Files/x makes the Windows importer clone the utility VM of the layer right below"},
		{"UtilityVM/ spelled with its '/'", []v1.Layer{withUVM, upper(dir("UtilityVM/"), dir("UtilityVM/Files/"))},
			`entry "UtilityVM/Files/": an entry under UtilityVM/ in a layer above the first, before the entry named UtilityVM (exactly so, without a '/'): hcsshim's legacy writer fails (missing UtilityVM directory)`},
		{"outside UtilityVM/Files", []v1.Layer{withUVM, upper(uvm, dir("UtilityVM/Other"))}, "hcsshim's legacy writer fails (invalid UtilityVM layer)"},
		{"UtilityVM/Files spelled otherwise", []v1.Layer{withUVM, upper(uvm, dir("UtilityVM/FILES"))}, "hcsshim's legacy writer fails (invalid UtilityVM layer)"},
		{"a link into the utility VM of a layer that has none", []v1.Layer{withUVM, upper(link("Files/u", "UtilityVM/Files/x"))},
			`entry "Files/u": a hard link to UtilityVM/Files/x: above the first layer, hcsshim looks for a target under UtilityVM/Files/ in the layer's own utility VM only`},
		{"a link to nothing in the utility VM", []v1.Layer{withUVM, upper(uvm, link("Files/u", "UtilityVM/Files/nothing"))},
			"a hard link to UtilityVM/Files/nothing, which the layer's utility VM (the one below, cloned, with the layer's entries before it) does not hold"},
		{"a link to what a whiteout removed from the utility VM", []v1.Layer{withUVM, upper(uvm, tar.Header{Name: "UtilityVM/Files/.wh.x", Typeflag: tar.TypeReg}, link("Files/u", "UtilityVM/Files/x"))},
			"a hard link to UtilityVM/Files/x, which the layer's utility VM"},
		{"a link to a directory of the utility VM", []v1.Layer{withUVM, upper(uvm, link("Files/u", "UtilityVM/Files/d"))}, "a hard link to the directory UtilityVM/Files/d"},
		{"a whiteout of nothing in the utility VM", []v1.Layer{withUVM, upper(uvm, tar.Header{Name: "UtilityVM/Files/.wh.nothing", Typeflag: tar.TypeReg})},
			"a whiteout of UtilityVM/Files/nothing, which the layer's utility VM (the one below, cloned, with the layer's entries before it) does not hold"},
		{"an entry whose parent the utility VM lacks", []v1.Layer{withUVM, upper(uvm, file("UtilityVM/Files/e/z"))},
			`entry "UtilityVM/Files/e/z": its parent UtilityVM/Files/e is not in the layer's utility VM (the one below, cloned, with the layer's entries before it)`},
		{"a file over a directory of the utility VM", []v1.Layer{withUVM, upper(uvm, file("UtilityVM/Files/D"))},
			"a file over the directory UtilityVM/Files/D of the layer's utility VM, which holds"},
		{"a hard link named into a utility VM the layer lacks", []v1.Layer{withUVM, upper(link("UtilityVM/Files/l", "Files/app/a.txt"))},
			"UtilityVM/Files/l is made in the layer's utility VM, and the layer has none"},
		{"a link to the layer's own pending link", []v1.Layer{withUVM, upper(uvm, link("UtilityVM/Files/l", "UtilityVM/Files/x"), link("Files/u", "UtilityVM/Files/L"))},
			"a hard link to UtilityVM/Files/L, which the layer's utility VM"},
	} {
		_, err := WindowsBaseView(imageOf(t, c.layers...), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// An entry that go-winio makes a directory (FILE_ATTRIBUTE_DIRECTORY in
// its MSWINDOWS.fileattr: a directory link, as Windows exports one,
// 0x410) over a directory of the layer's utility VM that holds files is
// made as hcsshim's legacy writer makes a directory there: what is there,
// of another kind, is removed with all it holds (RemoveAllRelative), and
// the link made in its place; a hard link to what was under it then
// finds nothing. It was refused as a file over a directory, which fails
// (RemoveRelative of a directory not empty), as a link without the
// attribute still does.
func TestWindowsBaseViewUtilityVMDirectoryLinkOverDirectory(t *testing.T) {
	dir := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
	dirLink := tar.Header{Name: "UtilityVM/Files/d", Typeflag: tar.TypeSymlink, Linkname: `C:\elsewhere`, Format: tar.FormatPAX,
		PAXRecords: map[string]string{"MSWINDOWS.fileattr": "1040"}}
	fileLink := tar.Header{Name: "UtilityVM/Files/d", Typeflag: tar.TypeSymlink, Linkname: `C:\elsewhere`}
	first := tarLayer(t, append(winLower(t), "UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/d/", "UtilityVM/Files/d/y")...)
	upper := func(hdrs ...tar.Header) v1.Layer {
		return layerOfHeaders(t, append([]tar.Header{dir("Hives"), dir("Files"), dir("UtilityVM")}, hdrs...)...)
	}
	if _, err := WindowsBaseView(imageOf(t, first, upper(dirLink)), 1<<30, 0); err != nil {
		t.Errorf("a directory link over a directory: %v", err)
	}
	for _, c := range []struct {
		name  string
		upper v1.Layer
		want  string
	}{
		{"a hard link to what the link replaced", upper(dirLink, tar.Header{Name: "Files/h", Typeflag: tar.TypeLink, Linkname: "UtilityVM/Files/d/y"}),
			"a hard link to UtilityVM/Files/d/y, which the layer's utility VM"},
		{"a link without FILE_ATTRIBUTE_DIRECTORY", upper(fileLink), "a file over the directory UtilityVM/Files/d of the layer's utility VM, which holds files"},
	} {
		_, err := WindowsBaseView(imageOf(t, first, c.upper), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// Names Win32 would not create (a device's, a trailing dot or space) are
// made as written by hcsshim's importer, which creates each entry
// relative to its directory's handle with NtCreateFile: a base holding
// them pulls, and is read, each its own name ("x." is not "x"). They
// were refused, as pallet's own layers refuse them.
func TestWindowsBaseViewTakesNTNames(t *testing.T) {
	img := imageOf(t, tarLayer(t, append(winLower(t), "Files/app/NUL.txt", "Files/app/x", "Files/app/x.", "Files/app/x ", "Files/aux/", "Files/aux/COM1")...))
	v, err := WindowsBaseView(img, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"app/NUL.txt", "app/x", "app/x.", "app/x ", "aux/COM1"} {
		if !v.Files[f] {
			t.Errorf("the view lacks %q; files %q", f, sortedKeys(v.Files))
		}
	}
	// What NTFS refuses below Win32 too stays refused.
	if _, err := WindowsBaseView(imageOf(t, tarLayer(t, append(winLower(t), "Files/app/a|b")...)), 1<<30, 0); err == nil || !strings.Contains(err.Error(), `"a|b" contains '|'`) {
		t.Errorf("a name with '|': %v", err)
	}
}

// go-winio makes a Windows layer's entry a directory or not by its
// MSWINDOWS.fileattr, not its typeflag: a directory entry without
// FILE_ATTRIBUTE_DIRECTORY is imported as a file, a file entry with it
// as a directory, and an attribute that is no number fails the import.
// Each is refused; a directory link (a symlink with the attribute) and
// the attributes BuildKit writes are read.
func TestWindowsBaseViewReadsFileAttributes(t *testing.T) {
	attr := func(name string, typ byte, a string) tar.Header {
		return tar.Header{Name: name, Typeflag: typ, Mode: 0o755, Linkname: map[byte]string{tar.TypeSymlink: "Windows"}[typ], Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": a}}
	}
	files := tar.Header{Name: "Files/", Typeflag: tar.TypeDir, Mode: 0o755}
	// A hard link is made of its target: its own attribute is not read.
	hard := attr("Files/h", tar.TypeLink, "16")
	hard.Linkname = "Files/a.txt"
	if _, err := WindowsBaseView(imageOf(t, layerOfHeaders(t, files, attr("Files/Windows/", tar.TypeDir, "16"), attr("Files/a.txt", tar.TypeReg, "32"),
		attr("Files/dirlink", tar.TypeSymlink, "1040"), hard)), 1<<30, 0); err != nil {
		t.Errorf("BuildKit's attributes: %v", err)
	}
	for _, c := range []struct {
		hdr  tar.Header
		want string
	}{
		{attr("Files/d/", tar.TypeDir, "32"), `entry "Files/d/": a directory whose MSWINDOWS.fileattr (32) lacks FILE_ATTRIBUTE_DIRECTORY`},
		{attr("Files/f", tar.TypeReg, "16"), `entry "Files/f": a file whose MSWINDOWS.fileattr (16) has FILE_ATTRIBUTE_DIRECTORY`},
		{attr("Files/f", tar.TypeReg, "x"), `entry "Files/f": its MSWINDOWS.fileattr "x" is no 32-bit number`},
	} {
		_, err := WindowsBaseView(imageOf(t, layerOfHeaders(t, files, c.hdr)), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: err = %v, want %q", c.hdr.Name, c.hdr.PAXRecords["MSWINDOWS.fileattr"], err, c.want)
		}
	}
}

// A hard link above a foreign layer, never read, may name one of its
// files: not being in the view, it is not refused; without the foreign
// layer it is.
func TestWindowsBaseViewHardLinkIntoForeignLayer(t *testing.T) {
	upper := tarLayer(t, "Hives/", "Files/", "Files/notepad2.exe=>Files/Windows/System32/notepad.exe")
	foreign := static.NewLayer([]byte("foreign"), types.DockerForeignLayer)
	img, err := mutate.Append(imageOf(t), mutate.Addendum{Layer: foreign, MediaType: types.DockerForeignLayer, URLs: []string{"https://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, upper); err != nil {
		t.Fatal(err)
	}
	v, err := WindowsBaseView(img, 1<<30, 0)
	if err != nil {
		t.Fatalf("above a foreign layer: %v", err)
	}
	if !v.Files["notepad2.exe"] {
		t.Errorf("files %q, want the link's name", sortedKeys(v.Files))
	}
	if _, err := WindowsBaseView(imageOf(t, tarLayer(t, winLower(t)...), upper), 1<<30, 0); err == nil || !strings.Contains(err.Error(), "which no earlier entry or lower layer holds") {
		t.Errorf("above read layers only: %v", err)
	}
}

// go-winio's backuptar writes a file's alternate data streams (a
// download's Zone.Identifier, the mark of the web) as entries of their
// own, named file:stream, right after the file's, and hcsshim's importer
// reads them back into that file (WriteBackupStreamFromTarFile takes
// each regular entry that follows, named with the file's tar name and a
// ':'): a base exported by Docker on Windows with one imports. A ':'
// name anywhere else reaches the importer as a file of its own, which it
// refuses (path contains invalid character).
func TestWindowsBaseViewAlternateDataStreams(t *testing.T) {
	// As backuptar.BasicInfoHeader writes them: no '/' after a
	// directory's name, the attributes in PAX records.
	winHdr := func(name string, attr int) tar.Header {
		h := tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o100000, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": strconv.Itoa(attr)}}
		if attr&0x10 != 0 {
			h.Typeflag, h.Mode = tar.TypeDir, 0o40000
		}
		return h
	}
	stream := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o100000} }
	lower := []tar.Header{winHdr("Files", 0x10), winHdr("Files/app", 0x10), stream("Files/app:dirstream"),
		winHdr("Files/app/tool.exe", 0x20), stream("Files/app/tool.exe:Zone.Identifier"), stream("Files/app/tool.exe:SmartScreen"),
		winHdr("Hives", 0x10), winHdr("Hives/System_Delta", 0x80)}
	upper := []tar.Header{winHdr("Files", 0x10), winHdr("Files/app", 0x10), winHdr("Files/app/new.zip", 0x2020), stream("Files/app/new.zip:Zone.Identifier"), winHdr("Hives", 0x10)}
	v, err := WindowsBaseView(imageOf(t, layerOfHeaders(t, lower...), layerOfHeaders(t, upper...)), 1<<30, 0)
	if err != nil {
		t.Fatalf("streams after their files: %v", err)
	}
	if got, want := sortedKeys(v.Files), []string{"app/new.zip", "app/tool.exe"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q: a stream is part of its file", got, want)
	}

	hard := tar.Header{Name: "Files/app/copy.exe", Typeflag: tar.TypeLink, Linkname: "Files/app/tool.exe"}
	for _, c := range []struct {
		name string
		hdrs []tar.Header
	}{
		{"after another file", []tar.Header{winHdr("Files/app/other.txt", 0x20), stream("Files/app/tool.exe:Zone.Identifier")}},
		{"after a hard link", []tar.Header{hard, stream("Files/app/copy.exe:Zone.Identifier")}},
		{"not a regular entry", []tar.Header{winHdr("Files/app/x.txt", 0x20), {Name: "Files/app/x.txt:s", Typeflag: tar.TypeSymlink, Linkname: "y"}}},
	} {
		_, err := WindowsBaseView(imageOf(t, layerOfHeaders(t, lower...), layerOfHeaders(t, append(slices.Clone(upper), c.hdrs...)...)), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), "contains ':'") {
			t.Errorf("a stream %s: err = %v, want it refused for its ':'", c.name, err)
		}
	}
}

// A base layer as Windows exports one, and a layer above it as Docker
// on Windows writes it, are read: directories with other attributes
// beside FILE_ATTRIBUTE_DIRECTORY (0x30, 0x2010), files with archive,
// normal and not-indexed ones (0x20, 0x80, 0x2020), security
// descriptors, a name longer than a tar header holds (GNU long name),
// the utility VM's files hard-linked to the container's, the hives'
// deltas, and above, a tombstone as a plain entry, names in another case
// than below and a hard link to a lower layer's file.
func TestWindowsBaseViewReadsExportedLayers(t *testing.T) {
	pax := func(name string, typ byte, attr int) tar.Header {
		return tar.Header{Name: name, Typeflag: typ, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"MSWINDOWS.fileattr": strconv.Itoa(attr), "MSWINDOWS.rawsd": "AQAEgBQAAAAkAAAAAAAAADAAAAABAgAAAAAABSAAAAAgAgAAAQEAAAAAAAUSAAAAAgAcAAEAAAAAAxQA/wEfAAEBAAAAAAAFEgAAAA=="}}
	}
	long := "Files/Windows/WinSxS/amd64_microsoft-windows-servicingstack_31bf3856ad364e35_10.0.20348.2200_none_1a2b3c4d5e6f7a8b/x.dll"
	base := layerOfHeaders(t, pax("Files", tar.TypeDir, 0x10), pax("Files/Windows", tar.TypeDir, 0x30),
		pax("Files/Windows/System32", tar.TypeDir, 0x2010), pax("Files/Windows/System32/kernel32.dll", tar.TypeReg, 0x20),
		pax("Files/Windows/System32/ntdll.dll", tar.TypeReg, 0x2020), pax("Files/Windows/WinSxS", tar.TypeDir, 0x10),
		pax(path.Dir(long), tar.TypeDir, 0x10), tar.Header{Name: long, Typeflag: tar.TypeReg, Format: tar.FormatGNU},
		pax("Files/ProgramData", tar.TypeDir, 0x2012), pax("Files/ProgramData/x.log", tar.TypeReg, 0x80),
		pax("Hives", tar.TypeDir, 0x10), pax("Hives/DefaultUser_Delta", tar.TypeReg, 0x20), pax("Hives/System_Delta", tar.TypeReg, 0x20),
		pax("UtilityVM", tar.TypeDir, 0x10), pax("UtilityVM/Files", tar.TypeDir, 0x10), pax("UtilityVM/Files/Windows", tar.TypeDir, 0x10),
		tar.Header{Name: "UtilityVM/Files/Windows/ntdll.dll", Typeflag: tar.TypeLink, Linkname: "Files/Windows/System32/ntdll.dll"})
	upper := layerOfHeaders(t, pax("Files", tar.TypeDir, 0x10), pax("Files/WINDOWS", tar.TypeDir, 0x30),
		pax("Files/WINDOWS/system32", tar.TypeDir, 0x2010), tar.Header{Name: "Files/WINDOWS/system32/.wh.kernel32.dll", Typeflag: tar.TypeReg},
		pax("Files/WINDOWS/system32/new.dll", tar.TypeReg, 0x20),
		tar.Header{Name: "Files/WINDOWS/system32/ntdll2.dll", Typeflag: tar.TypeLink, Linkname: "Files/Windows/System32/ntdll.dll"},
		pax("Hives", tar.TypeDir, 0x10), pax("Hives/Software_Delta", tar.TypeReg, 0x20))
	v, err := WindowsBaseView(imageOf(t, base, upper), 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ProgramData/x.log", "Windows/System32/new.dll", "Windows/System32/ntdll.dll", "Windows/System32/ntdll2.dll", long[len("Files/"):]}
	if got := sortedKeys(v.Files); !slices.Equal(got, want) {
		t.Errorf("files\n %q\nwant\n %q", got, want)
	}
}
