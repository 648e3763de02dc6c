package main

import (
	"archive/tar"
	"bytes"
	"errors"
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
// The utility VM is followed as hcsshim's legacy writer makes it above
// the first layer: the layer holds one once an entry named exactly
// UtilityVM, or a whiteout under UtilityVM/Files/, came, cloned from the
// one the layer right below holds (which must hold one); its entries
// under UtilityVM/ (so spelled) are written into it, only under
// UtilityVM/Files/ (so spelled), each's parent a directory there; an
// entry with FILE_ATTRIBUTE_DIRECTORY replaces what is there of another
// kind, with all it holds, any other fails over a directory that holds
// files; a whiteout there removes at once what must be there; a hard
// link's target under UtilityVM/Files/ is looked for there only, and
// one named there made when the layer ends.
func (w *winImport) theirLayer(b []byte, first bool) error {
	tr := tar.NewReader(bytes.NewReader(b))
	lower := maps.Clone(w.image)
	created := map[string]byte{}
	added := map[string]bool{} // hcsshim's addedFiles, by exact name
	whited := map[string]bool{}
	streamsOf := ""
	w.here, w.hereUnknown = nil, false
	if first {
		w.here = map[string]byte{}
	}
	var uvmLinks []string
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			for _, l := range uvmLinks {
				if w.here != nil {
					w.here[winFold(l)] = tar.TypeReg
				}
			}
			w.uvm, w.uvmUnknown = w.here, w.hereUnknown
			if w.uvm[winFold("UtilityVM/Files")] != tar.TypeDir {
				w.uvm = nil
			}
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
			case strings.HasPrefix(target, "UtilityVM/Files/"):
				if err := w.cloneUVM(); err != nil {
					return fail("%v", err)
				}
				if w.here != nil {
					k := winFold(target)
					if w.here[k] == 0 {
						return fail("a whiteout of %s, which the layer's utility VM does not hold: removed at once, it fails (file not found)", target)
					}
					w.removeUVM(k)
				}
				continue
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
		if !first && raw == "UtilityVM" {
			if err := w.cloneUVM(); err != nil {
				return fail("%v", err)
			}
			streamsOf = h.Name
			continue
		}
		if !first && strings.HasPrefix(name, "UtilityVM/") {
			if err := w.theirUVMEntry(h, raw, name, created, added, lower, &uvmLinks); err != nil {
				return fail("%v", err)
			}
			streamsOf = h.Name
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
			if first && inUVMFiles(key) {
				w.here[key] = tar.TypeReg
			}
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
		if first && inUVMFiles(key) {
			w.here[key] = kind
		}
		if !first && isDir {
			k := winFold(name + ".$wcidirs$")
			if _, ok := created[k]; ok {
				return fail("its metadata file %s.$wcidirs$ exists", name)
			}
			created[k] = tar.TypeReg
		}
		n := &wnode{kind: kind, dir: isDir, untyped: kind == tar.TypeSymlink && !typed, sd: h.PAXRecords["MSWINDOWS.rawsd"]}
		if n.sd != "" {
			n.attr = wAttrDirectory
			if typed {
				n.attr, _ = strconv.ParseUint(s, 10, 32)
			}
		}
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
			if !found && strings.HasPrefix(target, "UtilityVM/") {
				// Written into the layer's utility VM, or a link to be
				// made there when the layer ends.
				kind, found = w.here[winFold(target)], true
				if kind == 0 {
					kind = tar.TypeReg
				}
			}
		} else if rest, ok := strings.CutPrefix(target, "Files/"); ok {
			if n, ok := lower[winFold(rest)]; ok {
				kind, found = n.kind, true
			}
		} else if w.hereUnknown {
			return nil
		} else if w.here == nil {
			return fmt.Errorf("hard link to %q in the utility VM of a layer that has none (failed to find link target)", linkname)
		} else {
			kind = w.here[winFold(target)]
			found = kind != 0
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

// inUVMFiles says whether key, a winFold, is UtilityVM/Files or under it.
func inUVMFiles(key string) bool {
	return key == winFold("UtilityVM/Files") || strings.HasPrefix(key, winFold("UtilityVM/Files/"))
}

// cloneUVM gives the layer being read its utility VM, if it has none
// yet: the one the layer right below holds, cloned, which must be there.
func (w *winImport) cloneUVM() error {
	switch {
	case w.here != nil || w.hereUnknown:
	case w.uvmUnknown:
		w.hereUnknown = true
	case w.uvm == nil:
		return errors.New("the layer right below holds no utility VM to clone (cloning the parent utility VM image failed)")
	default:
		w.here, w.uvm = w.uvm, nil
	}
	return nil
}

// removeUVM forgets k, by winFold, and what is under it from the layer's
// utility VM.
func (w *winImport) removeUVM(k string) {
	for q := range w.here {
		if q == k || strings.HasPrefix(q, k+"/") {
			delete(w.here, q)
		}
	}
}

// theirUVMEntry writes an entry named under UtilityVM/ (raw as written,
// name cleaned), of a layer above the first, into the layer's utility
// VM, or says why the legacy writer fails to.
func (w *winImport) theirUVMEntry(h *tar.Header, raw, name string, created map[string]byte, added map[string]bool, lower map[string]*wnode, links *[]string) error {
	parent := func() error {
		if w.hereUnknown || name == "UtilityVM/Files" {
			return nil
		}
		if w.here == nil {
			return errors.New("made in a utility VM the layer does not have (path not found)")
		}
		if p := path.Dir(name); w.here[winFold(p)] != tar.TypeDir {
			return fmt.Errorf("parent %s is no directory of the layer's utility VM (path not found)", p)
		}
		return nil
	}
	if h.Typeflag == tar.TypeLink {
		if err := w.theirHardLink(raw, h.Linkname, false, created, added, lower); err != nil {
			return err
		}
		if err := parent(); err != nil {
			return err
		}
		*links = append(*links, name)
		added[raw] = true
		return nil
	}
	switch {
	case w.here == nil && !w.hereUnknown:
		return errors.New("under UtilityVM/ before an entry named UtilityVM (missing UtilityVM directory)")
	case name != "UtilityVM/Files" && !strings.HasPrefix(name, "UtilityVM/Files/"):
		return errors.New("under UtilityVM/ but not UtilityVM/Files/ (invalid UtilityVM layer)")
	}
	if err := parent(); err != nil {
		return err
	}
	kind := byte(tar.TypeReg)
	switch h.Typeflag {
	case tar.TypeDir:
		kind = tar.TypeDir
	case tar.TypeSymlink:
		if err := winReparseFits(h.Linkname); err != nil {
			return err
		}
		kind = tar.TypeSymlink
	}
	isDir := h.Typeflag == tar.TypeDir
	if s, ok := h.PAXRecords["MSWINDOWS.fileattr"]; ok {
		attr, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("MSWINDOWS.fileattr %q: %v", s, err)
		}
		isDir = attr&wAttrDirectory != 0
	}
	added[name] = true
	if w.here == nil {
		return nil
	}
	k := winFold(name)
	switch old := w.here[k]; {
	case old == 0:
	case isDir:
		if old != kind {
			w.removeUVM(k)
		}
	case old == tar.TypeDir:
		for q := range w.here {
			if strings.HasPrefix(q, k+"/") {
				return errors.New("over a directory of the layer's utility VM that holds files (directory not empty)")
			}
		}
	}
	w.here[k] = kind
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
		// The union shows the top listing's descriptor and attributes.
		old.sd, old.attr = n.sd, n.attr
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
		{"a utility VM above the first layer", [][]*tar.Header{first, above(dir("UtilityVM"), reg("UtilityVM/Files/.wh.t.exe"), reg("UtilityVM/Files/n.exe"),
			hard("UtilityVM/Files/n2.exe", "UtilityVM/Files/n.exe"), hard("Files/u", "UtilityVM/Files/n.exe")), above(dir("UtilityVM"), hard("Files/v", "UtilityVM/Files/n2.exe"))}, ""},
		{"a utility VM above a layer without one", [][]*tar.Header{first, above(reg("Files/x")), above(dir("UtilityVM"))}, "cloning the parent utility VM image failed"},
		{"UtilityVM/ with its '/'", [][]*tar.Header{first, above(dir("UtilityVM/"), dir("UtilityVM/Files/"))}, "missing UtilityVM directory"},
		{"UtilityVM/FILES", [][]*tar.Header{first, above(dir("UtilityVM"), dir("UtilityVM/FILES"))}, "invalid UtilityVM layer"},
		{"a whiteout of nothing in the utility VM", [][]*tar.Header{first, above(dir("UtilityVM"), reg("UtilityVM/Files/.wh.gone"))}, "which the layer's utility VM does not hold"},
		{"a hard link into a utility VM the layer lacks", [][]*tar.Header{first, above(hard("Files/u", "UtilityVM/Files/t.exe"))}, "utility VM of a layer that has none"},
		{"a file over a directory of the utility VM that holds files", [][]*tar.Header{first, above(dir("UtilityVM"), reg("UtilityVM/Files"))}, "directory not empty"},
		{"a directory link over it", [][]*tar.Header{first, above(dir("UtilityVM"), attr(&tar.Header{Name: "UtilityVM/Files", Typeflag: tar.TypeSymlink, Linkname: `C:\x`}, "1040"))}, ""},
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
