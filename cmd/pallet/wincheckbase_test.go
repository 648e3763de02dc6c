package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"path"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// theirLayer imports a layer of an image's base, not pallet's, as
// hcsshim's importer does (ociwclayer.ImportLayerFromTar): the image's
// first layer by its base layer writer, any other by its legacy writer.
// What pallet's own layers are held to beyond that (BuildKit's records,
// no links of their own kind, no whiteouts) does not bind a base: Windows
// exports hard links, alternate data streams, device names and
// tombstones. Written apart from pallet's reader of a base
// (image.WindowsBaseView), it follows the importer's rules, not its code:
//
//   - a name is relative, not above the layer's root, under Files/,
//     Hives/ or UtilityVM/ ('\' separates), its components ones NTFS
//     holds (NtCreateFile relative to a directory: a device's name or a
//     trailing dot is a name like any);
//   - a regular entry named FILE:STREAM right after FILE's is a stream of
//     it (backuptar.WriteBackupStreamFromTarFile);
//   - within a layer a name comes once, without case, after its parent,
//     listed in that layer as a directory (each is created new in the
//     layer's own directory); above the first layer, a directory's
//     metadata file NAME.$wcidirs$ is created beside it;
//   - MSWINDOWS.fileattr, when given, is a number, and makes the entry a
//     directory or not;
//   - a whiteout is refused in the first layer, names an entry under
//     Files/ so spelled, and none its own layer holds;
//   - a hard link in the first layer names a file the layer made before
//     it (any case); above it, its name as written and its target
//     cleaned are under Files/ (or UtilityVM/Files/), and the target is a
//     file its layer added under that exact name, or else one the lower
//     layers held when the layer started (any case).
//
// The utility VM is followed only in the first layer: one above it is
// refused as not checked here.
func (w *winImport) theirLayer(b []byte, first bool) error {
	tr := tar.NewReader(bytes.NewReader(b))
	lower := maps.Clone(w.image)
	created := map[string]byte{}
	added := map[string]bool{} // hcsshim's addedFiles, by exact name
	whited := map[string]bool{}
	streamsOf := ""
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %v", err)
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("base entry %d %q: %s", i, h.Name, fmt.Sprintf(format, a...))
		}
		if streamsOf != "" && h.Typeflag == tar.TypeReg && strings.HasPrefix(h.Name, streamsOf+":") {
			continue
		}
		streamsOf = ""
		raw := strings.ReplaceAll(h.Name, `\`, "/")
		name := path.Clean(raw)
		if strings.HasPrefix(raw, "/") || name == "." || name == ".." || strings.HasPrefix(name, "../") {
			return fail("not a name relative to the layer, below its root")
		}
		comps := strings.Split(name, "/")
		switch comps[0] {
		case "Files", "Hives":
		case "UtilityVM":
			if !first {
				return fail("a utility VM above the base's first layer, which this reader does not follow")
			}
		default:
			return fail("outside Files/, Hives/ and UtilityVM/")
		}
		for _, c := range comps[1:] {
			if err := ntfsComponent(c); err != nil {
				return fail("%v", err)
			}
		}
		if hidden, ok := strings.CutPrefix(comps[len(comps)-1], ".wh."); ok {
			target := path.Join(path.Dir(name), hidden)
			switch {
			case first:
				return fail("a whiteout in the first layer (base layer cannot have tombstones)")
			case hidden == "" || hidden == "." || hidden == ".." || hidden == ".wh..opq":
				return fail("a whiteout of %q, which hcsshim does not apply as meant", hidden)
			case !strings.HasPrefix(target, "Files/"):
				return fail("a whiteout of %s, outside Files/ (invalid tombstone)", target)
			}
			if _, ok := created[winFold(target)]; ok {
				return fail("a whiteout of what its own layer holds, removed after the layer's files")
			}
			whited[winFold(target)] = true
			w.removeTree(winFold(strings.TrimPrefix(target, "Files/")))
			continue
		}
		key := winFold(name)
		if _, ok := created[key]; ok {
			return fail("created twice (names compared without case): file exists")
		}
		if whited[key] {
			return fail("whited out by its own layer, which removes it after the layer's files")
		}
		if len(comps) > 1 {
			if parent := path.Dir(name); created[winFold(parent)] != tar.TypeDir {
				return fail("parent %s not created before it as a directory in this layer (path not found)", parent)
			}
		}
		kind := byte(tar.TypeReg)
		switch h.Typeflag {
		case tar.TypeLink:
			if err := w.theirHardLink(raw, h.Linkname, first, created, added, lower); err != nil {
				return fail("%v", err)
			}
			created[key] = tar.TypeReg
			added[raw] = true
			w.putTheirs(name, &wnode{kind: tar.TypeReg})
			continue
		case tar.TypeSymlink:
			if err := winReparseFits(h.Linkname); err != nil {
				return fail("%v", err)
			}
			kind = tar.TypeSymlink
		}
		isDir := h.Typeflag == tar.TypeDir
		s, typed := h.PAXRecords["MSWINDOWS.fileattr"]
		if typed {
			attr, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return fail("MSWINDOWS.fileattr %q: %v", s, err)
			}
			isDir = attr&wAttrDirectory != 0
		}
		switch {
		case h.Typeflag == tar.TypeDir && !isDir:
			return fail("a directory go-winio makes a file: its attributes lack FILE_ATTRIBUTE_DIRECTORY")
		case h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeSymlink && isDir:
			return fail("a file go-winio makes a directory: its attributes have FILE_ATTRIBUTE_DIRECTORY")
		case h.Typeflag == tar.TypeDir:
			kind = tar.TypeDir
		}
		created[key] = kind
		added[name] = true
		streamsOf = h.Name
		if !first && isDir {
			k := winFold(name + ".$wcidirs$")
			if _, ok := created[k]; ok {
				return fail("its metadata file %s.$wcidirs$ exists", name)
			}
			created[k] = tar.TypeReg
		}
		n := &wnode{kind: kind, dir: isDir, untyped: kind == tar.TypeSymlink && !typed}
		if kind == tar.TypeSymlink {
			n.link = strings.ReplaceAll(h.Linkname, `\`, "/")
		}
		w.putTheirs(name, n)
	}
}

// theirHardLink says why hcsshim's importer fails to link raw (the
// entry's name, '\' made '/') to linkname.
func (w *winImport) theirHardLink(raw, linkname string, first bool, created map[string]byte, added map[string]bool, lower map[string]*wnode) error {
	target := path.Clean(strings.ReplaceAll(linkname, `\`, "/"))
	kind, found := byte(0), false
	switch {
	case first:
		kind, found = created[winFold(target)]
	default:
		within := func(s string) bool { return strings.HasPrefix(s, "Files/") || strings.HasPrefix(s, "UtilityVM/Files/") }
		if !within(raw) || !within(target) {
			return fmt.Errorf("hard link %q => %q outside Files/: invalid hard link in layer", raw, linkname)
		}
		if added[target] {
			kind, found = created[winFold(target)]
		} else if rest, ok := strings.CutPrefix(target, "Files/"); ok {
			if n, ok := lower[winFold(rest)]; ok {
				kind, found = n.kind, true
			}
		} else {
			return fmt.Errorf("hard link to %q in the utility VM, which this reader does not follow above the first layer", linkname)
		}
	}
	switch {
	case !found:
		return fmt.Errorf("hard link target %q not found (failed to find link target)", linkname)
	case kind == tar.TypeDir:
		return fmt.Errorf("hard link to the directory %q", linkname)
	case kind == tar.TypeSymlink:
		return fmt.Errorf("hard link to the link %q, opened without following it", linkname)
	}
	return nil
}

// putTheirs records n at name, under Files/, in the image: a directory
// over a directory merges into the first spelling; anything else
// replaces what is there, and what it held.
func (w *winImport) putTheirs(name string, n *wnode) {
	p, ok := strings.CutPrefix(name, "Files/")
	if !ok {
		return
	}
	k := winFold(p)
	if old, ok := w.image[k]; ok && old.kind == tar.TypeDir && n.kind == tar.TypeDir {
		return
	}
	w.removeTree(k)
	n.name = p
	w.image[k] = n
}

// removeTree forgets the image's path k, by winFold, and what is under it.
func (w *winImport) removeTree(k string) {
	for q := range w.image {
		if q == k || strings.HasPrefix(q, k+"/") {
			delete(w.image, q)
		}
	}
}

// ntfsComponent says why NTFS cannot hold a file named c, created
// relative to its directory (below the Win32 rules for devices and
// trailing dots).
func ntfsComponent(c string) error {
	switch {
	case c == "" || c == "." || c == "..":
		return fmt.Errorf("component %q", c)
	case !utf8.ValidString(c):
		return fmt.Errorf("component %q is not UTF-8", c)
	case strings.ContainsAny(c, `<>:"\|?*`):
		return fmt.Errorf("component %q has a character NTFS refuses", c)
	case strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 }):
		return fmt.Errorf("component %q has a control character", c)
	case len(utf16.Encode([]rune(c))) > 255:
		return fmt.Errorf("component of %d UTF-16 units: NTFS names hold 255", len(utf16.Encode([]rune(c))))
	}
	return nil
}

// The reader takes of a base's layers what hcsshim's importer takes, and
// refuses what it fails on: each case is a base of one or two layers.
func TestWindowsCheckerBaseLayers(t *testing.T) {
	reg := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeReg} }
	dir := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeDir} }
	hard := func(n, to string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeLink, Linkname: to} }
	attr := func(h *tar.Header, a string) *tar.Header {
		h.Format, h.PAXRecords = tar.FormatPAX, map[string]string{"MSWINDOWS.fileattr": a, "MSWINDOWS.rawsd": "AQAEgBQAAAAkAAAAAAAAADAAAAA="}
		return h
	}
	first := []*tar.Header{dir("Files"), dir("Files/app"), reg("Files/app/tool.exe"), reg("Files/app/tool.exe:Zone.Identifier"),
		attr(reg("Files/app/aux.log"), "8224"), reg("Files/app/x."), hard("Files/tool2.exe", "FILES/APP/TOOL.EXE"),
		dir("Hives"), reg("Hives/System_Delta"), dir("UtilityVM"), dir("UtilityVM/Files"), hard("UtilityVM/Files/t.exe", "Files/app/tool.exe")}
	above := func(hdrs ...*tar.Header) []*tar.Header {
		return append([]*tar.Header{dir("Hives"), dir("Files")}, hdrs...)
	}
	for _, c := range []struct {
		name   string
		layers [][]*tar.Header
		want   string
	}{
		{"as Windows exports them", [][]*tar.Header{first, above(attr(dir("Files/APP"), "16"), reg("Files/APP/.wh.x."), hard("Files/APP/t3.exe", "Files/tool2.exe"),
			reg("Files/app/new.exe"), hard("Files/h", "./Files/app/new.exe"), reg("Files/APP/aux.log"), hard("Files/h2", "Files/app/AUX.LOG"))}, ""},
		{"a stream not after its file", [][]*tar.Header{{dir("Files"), reg("Files/a"), reg("Files/b"), reg("Files/a:s")}}, `"a:s" has a character NTFS refuses`},
		{"a whiteout in the first layer", [][]*tar.Header{{dir("Files"), reg("Files/.wh.a")}}, "a whiteout in the first layer"},
		{"a whiteout outside Files/", [][]*tar.Header{first, above(reg("Hives/.wh.System_Delta"))}, "invalid tombstone"},
		{"a hard link to nothing", [][]*tar.Header{first, above(hard("Files/h", "Files/app/gone.exe"))}, "failed to find link target"},
		{"a hard link named ./Files/", [][]*tar.Header{first, above(hard("./Files/h", "Files/app/tool.exe"))}, "invalid hard link in layer"},
		{"a hard link to the layer's file spelled otherwise", [][]*tar.Header{first, above(reg("Files/new"), hard("Files/h", "Files/NEW"))}, "failed to find link target"},
		{"a hard link to a directory", [][]*tar.Header{first, above(hard("Files/h", "Files/app"))}, "hard link to the directory"},
		{"a hard link to what a whiteout removed", [][]*tar.Header{first, above(dir("Files/app"), reg("Files/app/.wh.tool.exe")), above(hard("Files/h", "Files/app/tool.exe"))},
			"failed to find link target"},
		{"a directory without its attribute", [][]*tar.Header{{attr(dir("Files"), "32")}}, "a directory go-winio makes a file"},
		{"a parent not listed", [][]*tar.Header{first, above(reg("Files/app/b.exe"))}, "parent Files/app not created"},
		{"a utility VM above the first layer", [][]*tar.Header{first, above(dir("UtilityVM"))}, "does not follow"},
		{"a name NTFS refuses", [][]*tar.Header{{dir("Files"), reg("Files/a|b")}}, "has a character NTFS refuses"},
	} {
		w := &winImport{image: map[string]*wnode{}, baseLayers: len(c.layers)}
		var err error
		for _, l := range c.layers {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range l {
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
			}
			tw.Close()
			if err = w.layer(buf.Bytes()); err != nil {
				break
			}
		}
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
