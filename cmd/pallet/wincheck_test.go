package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// This file is a reader of Windows images written apart from pallet's own
// (layer.VerifyWindows): it shares no code with the writer, and follows
// entry by entry what the Windows importer does with a layer: hcsshim's
// ociwclayer.ImportLayerFromTar hands each tar entry to go-winio's
// backuptar (FileInfoFromHeader, WriteBackupStreamFromTarFile) and to a
// layer writer that creates it with a create-new call (FILE_CREATE) in an
// empty import directory, on a file system that compares names without
// case. What would fail there fails here, with the entry named.

// The BuildKit descriptors (util/winlayers), as BuildKit writes them.
const (
	buildkitDirSD  = "AQAEgBQAAAAkAAAAAAAAADAAAAABAgAAAAAABSAAAAAgAgAAAQEAAAAAAAUSAAAAAgCoAAcAAAAAAxgA/wEfAAECAAAAAAAFIAAAACACAAAAAxQA/wEfAAEBAAAAAAAFEgAAAAAAGAD/AR8AAQIAAAAAAAUgAAAAIAIAAAALFAAAAAAQAQEAAAAAAAMAAAAAAAMYAKkAEgABAgAAAAAABSAAAAAhAgAAAAIYAAQAAAABAgAAAAAABSAAAAAhAgAAAAIYAAIAAAABAgAAAAAABSAAAAAhAgAA"
	buildkitFileSD = "AQAEgBQAAAAkAAAAAAAAADAAAAABAgAAAAAABSAAAAAgAgAAAQEAAAAAAAUSAAAAAgBMAAMAAAAAABgA/wEfAAECAAAAAAAFIAAAACACAAAAABQA/wEfAAEBAAAAAAAFEgAAAAAAGACpABIAAQIAAAAAAAUgAAAAIQIAAA=="
)

const (
	wAttrReadonly     = 0x1
	wAttrHidden       = 0x2
	wAttrSystem       = 0x4
	wAttrDirectory    = 0x10
	wAttrArchive      = 0x20
	wAttrNormal       = 0x80
	wAttrReparsePoint = 0x400
)

// wnode is one path of a Windows image as the importer has made it.
type wnode struct {
	name string // as written, without Files/
	kind byte   // tar typeflag: '5' directory, '0' file, '2' symlink
	link string // symlink target, '\' made '/'
	dir  bool   // for a symlink: a directory link
	// untyped: a base's symlink without attributes, which Windows
	// reads as its target is when followed.
	untyped bool
	// sd and attr are a directory's MSWINDOWS.rawsd and fileattr as the
	// top layer that lists it gives them ("" when it gives none): what
	// the union shows, and what a later layer re-listing it must keep.
	sd   string
	attr uint64
}

// winFold is the key under which a case-insensitive file system finds a
// name: upper case of lower case, rune by rune.
func winFold(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
}

// checkWindowsLayout checks every Windows image under the layout at dir,
// and that the index entry of each repeats its config's platform.
// wantOSVersion, when given, is the os.version of each Windows image in
// index order ("" for none, as on a host-process base).
func checkWindowsLayout(t *testing.T, dir string, wantOSVersion ...string) {
	t.Helper()
	checkWindowsLayoutOnBase(t, dir, 0, wantOSVersion...)
}

// checkWindowsLayoutOnBase is checkWindowsLayout for images on a Windows
// base whose first baseLayers layers are not pallet's: those are held to
// what hcsshim's importer accepts (theirLayer), hard links, whiteouts,
// alternate data streams and all, not to what pallet writes.
func checkWindowsLayoutOnBase(t *testing.T, dir string, baseLayers int, wantOSVersion ...string) {
	t.Helper()
	var seen []string
	for _, li := range layoutImages(t, dir) {
		d, img := li.desc, li.img
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "windows" {
			if d.Platform != nil && d.Platform.OS == "windows" {
				t.Errorf("%s: index entry says windows, config %s", d.Digest, cf.OS)
			}
			continue
		}
		if d.Platform == nil || d.Platform.OS != "windows" || d.Platform.Architecture != cf.Architecture || d.Platform.OSVersion != cf.OSVersion {
			t.Errorf("%s: index platform %+v, config %s/%s os.version %q", d.Digest, d.Platform, cf.OS, cf.Architecture, cf.OSVersion)
		}
		seen = append(seen, cf.OSVersion)
		if err := checkWindowsImage(img, baseLayers); err != nil {
			t.Errorf("image %s: %v", d.Digest, err)
		}
	}
	if len(seen) == 0 {
		t.Fatalf("%s: no Windows image", dir)
	}
	if len(wantOSVersion) > 0 && strings.Join(seen, ",") != strings.Join(wantOSVersion, ",") {
		t.Errorf("os.version of the Windows images %q, want %q", seen, wantOSVersion)
	}
}

// checkWindowsImage reads the image as a Windows host pulling it would:
// each blob against its digest and size, each layer's tar against the
// config's diffID, and then every entry through the importer's rules.
func checkWindowsImage(img v1.Image, baseLayers int) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	if cf.Architecture != "amd64" && cf.Architecture != "arm64" {
		return fmt.Errorf("architecture %q", cf.Architecture)
	}
	if len(m.Layers) != len(cf.RootFS.DiffIDs) {
		return fmt.Errorf("%d layers, %d diffIDs", len(m.Layers), len(cf.RootFS.DiffIDs))
	}
	nonEmpty := 0
	for _, h := range cf.History {
		if !h.EmptyLayer {
			nonEmpty++
		}
	}
	if len(cf.History) > 0 && nonEmpty != len(m.Layers) {
		return fmt.Errorf("%d layers, %d history entries with a layer", len(m.Layers), nonEmpty)
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	imp := &winImport{image: map[string]*wnode{}, baseLayers: baseLayers}
	for i, l := range layers {
		d := m.Layers[i]
		if !d.MediaType.IsDistributable() {
			if i != imp.count {
				return fmt.Errorf("layer %d: foreign layer above pallet's", i)
			}
			imp.count++
			imp.foreignBase = true
			imp.uvm, imp.uvmUnknown = nil, true
			continue
		}
		raw, err := readBlob(l)
		if err != nil {
			return fmt.Errorf("layer %d: %v", i, err)
		}
		if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != d.Digest.String() || int64(len(raw)) != d.Size {
			return fmt.Errorf("layer %d: blob of %d bytes does not match its descriptor %s (%d bytes)", i, len(raw), d.Digest, d.Size)
		}
		var tarBytes []byte
		switch d.MediaType {
		case types.OCILayer, types.DockerLayer:
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return fmt.Errorf("layer %d: gzip: %v", i, err)
			}
			if tarBytes, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("layer %d: gzip: %v", i, err)
			}
		case types.OCIUncompressedLayer, types.DockerUncompressedLayer:
			tarBytes = raw
		default:
			return fmt.Errorf("layer %d: media type %s, which Windows does not pull everywhere", i, d.MediaType)
		}
		if sum := sha256.Sum256(tarBytes); "sha256:"+hex.EncodeToString(sum[:]) != cf.RootFS.DiffIDs[i].String() {
			return fmt.Errorf("layer %d: tar sha256 %x, config diffID %s", i, sum, cf.RootFS.DiffIDs[i])
		}
		if err := imp.layer(tarBytes); err != nil {
			return fmt.Errorf("layer %d: %v", i, err)
		}
	}
	return imp.finish()
}

func readBlob(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// winImport is the importer's state across the layers of one image.
type winImport struct {
	count       int
	foreignBase bool
	// uvm is the utility VM the last base layer read holds in its own
	// directory, by winFold of each path from UtilityVM/Files down, each
	// one's kind; nil if it holds none, and uvmUnknown if that layer is
	// foreign. here and hereUnknown are the same of the layer being read.
	uvm, here               map[string]byte
	uvmUnknown, hereUnknown bool
	// baseLayers counts the image's first layers that are its base's,
	// not pallet's.
	baseLayers int
	image      map[string]*wnode // by winFold of the path under Files/
}

var paxTime = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// layer imports one layer: a base layer (the first, with no parent) by
// hcsshim's base layer writer, any other by its legacy layer writer.
func (w *winImport) layer(b []byte) error {
	base := w.count == 0
	if w.count < w.baseLayers {
		w.count++
		return w.theirLayer(b, base)
	}
	w.count++
	tr := tar.NewReader(bytes.NewReader(b))
	// created is what this layer's import directory holds, by winFold of
	// the full name (Files/..., Hives/...), as NTFS finds it; exact is
	// the same by exact name, as hcsshim's addedFiles finds hard link
	// targets.
	created := map[string]byte{}
	exact := map[string]byte{}
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("tar: %v", err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		fail := func(format string, a ...any) error {
			return fmt.Errorf("entry %d %q: %s", i, h.Name, fmt.Sprintf(format, a...))
		}
		// go-winio turns every time into a FILETIME through UnixNano:
		// past 2262 it overflows, and the file gets a garbage time, or a
		// negative one that setting the file's times refuses.
		if h.ModTime.Before(time.Unix(0, 0)) || h.ModTime.After(time.Unix(0, math.MaxInt64)) {
			return fail("mtime %s outside what go-winio converts (1970 to 2262)", h.ModTime)
		}
		if s := h.PAXRecords["LIBARCHIVE.creationtime"]; paxTime.MatchString(s) {
			sec, _, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
			if n, err := strconv.ParseInt(sec, 10, 64); err != nil || n > math.MaxInt64/int64(time.Second) {
				return fail("LIBARCHIVE.creationtime %s outside what go-winio converts", s)
			}
		}
		if strings.HasPrefix(h.Name, "/") || name == "" || path.Clean(name) != name {
			return fail("not a clean relative name")
		}
		if !base && i < 2 {
			if want := [2]string{"Hives", "Files"}[i]; name != want || h.Typeflag != tar.TypeDir {
				return fail("a layer above the base starts with the directories Hives and Files, in that order")
			}
		}
		if base && i == 0 && (name != "Files" || h.Typeflag != tar.TypeDir) {
			return fail("a base layer starts with the directory Files")
		}
		comps := strings.Split(name, "/")
		if comps[0] != "Files" && comps[0] != "Hives" {
			return fail("outside Files/ and Hives/")
		}
		for _, c := range comps[1:] {
			if err := winComponent(c); err != nil {
				return fail("%v", err)
			}
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeSymlink && h.Typeflag != tar.TypeLink {
			return fail("typeflag %q, which the importer cannot make", h.Typeflag)
		}
		if h.Typeflag == tar.TypeDir && h.Size != 0 {
			return fail("directory with size %d", h.Size)
		}
		if strings.HasPrefix(comps[len(comps)-1], ".wh.") {
			// pallet deletes nothing: a whiteout would be a file's name
			// taken for a deletion.
			return fail("a whiteout")
		}
		for k := range h.PAXRecords {
			switch {
			case k == "MSWINDOWS.fileattr", k == "MSWINDOWS.rawsd", k == "LIBARCHIVE.creationtime":
			case strings.HasPrefix(k, "MSWINDOWS."):
				return fail("unexpected record %s", k)
			}
		}
		if len(comps) > 1 {
			parent := strings.Join(comps[:len(comps)-1], "/")
			if k, ok := created[winFold(parent)]; !ok || k != tar.TypeDir {
				return fail("parent %s not created before it as a directory in this layer (the import fails: path not found)", parent)
			}
		}
		key := winFold(name)
		if _, ok := created[key]; ok {
			return fail("created twice (names compared without case): file exists")
		}
		if h.Typeflag == tar.TypeLink {
			if base {
				return fail("a hard link in a base layer")
			}
			target := strings.TrimSuffix(h.Linkname, "/")
			if !strings.HasPrefix(target, "Files/") || comps[0] != "Files" {
				return fail("hard link %q outside Files/: invalid hard link in layer", h.Linkname)
			}
			if exact[target] != tar.TypeReg {
				return fail("hard link target %q is not a file added before it", h.Linkname)
			}
			created[key], exact[name] = tar.TypeLink, tar.TypeReg
			w.image[winFold(strings.TrimPrefix(name, "Files/"))] = &wnode{name: name, kind: tar.TypeReg}
			continue
		}
		created[key], exact[name] = h.Typeflag, h.Typeflag
		// lowerDir is the directory a lower layer shows at this name
		// with its own descriptor, which a layer of pallet's re-listing
		// it keeps (the union shows the top layer's): nil for any other.
		var lowerDir *wnode
		if p, ok := strings.CutPrefix(name, "Files/"); ok && !base && h.Typeflag == tar.TypeDir {
			if old := w.image[winFold(p)]; old != nil && old.kind == tar.TypeDir && old.sd != "" {
				lowerDir = old
			}
		}
		var attr uint64
		if s, ok := h.PAXRecords["MSWINDOWS.fileattr"]; ok {
			if attr, err = strconv.ParseUint(s, 10, 32); err != nil {
				return fail("MSWINDOWS.fileattr %q: %v", s, err)
			}
			if attr&^(wAttrReadonly|wAttrHidden|wAttrSystem|wAttrDirectory|wAttrArchive|wAttrNormal|wAttrReparsePoint) != 0 && lowerDir == nil {
				return fail("MSWINDOWS.fileattr %#x has unexpected bits", attr)
			}
		} else if !base {
			return fail("no MSWINDOWS.fileattr")
		} else if h.Typeflag == tar.TypeDir {
			attr = wAttrDirectory
		}
		isDir := attr&wAttrDirectory != 0
		switch h.Typeflag {
		case tar.TypeDir:
			if !isDir || attr&wAttrReparsePoint != 0 {
				return fail("a directory with attributes %#x", attr)
			}
		case tar.TypeReg:
			if isDir || attr&wAttrReparsePoint != 0 {
				return fail("a file with attributes %#x", attr)
			}
		case tar.TypeSymlink:
			if base {
				// A base layer's link may lead anywhere (C:\ProgramData,
				// \Windows): Windows reads it as written. pallet's own
				// links stay relative, inside the image. Its reparse
				// point is still set as go-winio encodes it: the
				// target must fit one.
				if err := winReparseFits(h.Linkname); err != nil {
					return fail("%v", err)
				}
				if attr == 0 {
					break
				}
			}
			if attr&wAttrReparsePoint == 0 {
				return fail("a symlink without FILE_ATTRIBUTE_REPARSE_POINT (%#x)", attr)
			}
			if base {
				break
			}
			if err := winLinkTarget(h.Linkname); err != nil {
				return fail("%v", err)
			}
		}
		// The legacy writer keeps the metadata of a directory (or a
		// directory link) in a file beside it, NAME.$wcidirs$, created new.
		if !base && isDir {
			k := winFold(name + ".$wcidirs$")
			if _, ok := created[k]; ok {
				return fail("its metadata file %s.$wcidirs$ exists", name)
			}
			created[k] = tar.TypeReg
		}
		if !base && name != "Files" && name != "Hives" {
			if s, ok := h.PAXRecords["LIBARCHIVE.creationtime"]; !ok || !paxTime.MatchString(s) {
				return fail("LIBARCHIVE.creationtime %q", s)
			}
			sd, ok := h.PAXRecords["MSWINDOWS.rawsd"]
			if !ok {
				return fail("no MSWINDOWS.rawsd: the file gets no ACL")
			}
			raw, err := base64.StdEncoding.DecodeString(sd)
			if err != nil {
				return fail("MSWINDOWS.rawsd: %v", err)
			}
			if err := parseSD(raw); err != nil {
				return fail("MSWINDOWS.rawsd: %v", err)
			}
			want := buildkitFileSD
			if isDir {
				want = buildkitDirSD
			}
			if lowerDir != nil {
				if sd != lowerDir.sd {
					return fail("MSWINDOWS.rawsd is not the one the directory has below, which the union would replace with another")
				}
				if wantAttr := lowerDir.attr&^wAttrReparsePoint | wAttrDirectory; attr != wantAttr {
					return fail("MSWINDOWS.fileattr %d is not the directory's below (%d)", attr, wantAttr)
				}
			} else if sd != want {
				return fail("MSWINDOWS.rawsd is not BuildKit's %s descriptor", map[bool]string{true: "directory", false: "file"}[isDir])
			}
		}
		if base && len(h.PAXRecords) > 0 {
			for k := range h.PAXRecords {
				// A link's attributes say whether it is a directory
				// link, as a base exported from Windows types it.
				if k == "MSWINDOWS.fileattr" && h.Typeflag == tar.TypeSymlink {
					continue
				}
				if strings.HasPrefix(k, "MSWINDOWS.") || strings.HasPrefix(k, "LIBARCHIVE.") {
					return fail("record %s in a base layer", k)
				}
			}
		}
		if comps[0] != "Files" || name == "Files" {
			continue
		}
		p := strings.TrimPrefix(name, "Files/")
		n := &wnode{name: p, kind: h.Typeflag, dir: isDir, sd: h.PAXRecords["MSWINDOWS.rawsd"], attr: attr}
		if h.Typeflag == tar.TypeSymlink {
			n.link = strings.ReplaceAll(h.Linkname, `\`, "/")
		}
		// A later layer's path hides the earlier one's; a directory above
		// a directory merges. A directory placed where a lower layer has
		// a file or link, or the other way, hides it and all below.
		// A directory where a lower layer has a link replaces the link on
		// Windows, where Docker's COPY would have written through it.
		if old, ok := w.image[winFold(p)]; ok && old.kind == tar.TypeSymlink && h.Typeflag == tar.TypeDir && old.dir {
			return fail("a directory over the directory link %s -> %s of a lower layer: Windows replaces the link, and the files never reach its target", old.name, old.link)
		}
		// A file or link where a lower layer has a directory hides the
		// directory and all it holds on Windows; Docker's COPY would have
		// put the file into it, and a recipe refuses it.
		if old, ok := w.image[winFold(p)]; ok && old.kind == tar.TypeDir && h.Typeflag != tar.TypeDir {
			return fail("a %s over the directory %s of a lower layer: Windows hides the directory and all it holds", map[byte]string{tar.TypeReg: "file", tar.TypeSymlink: "link"}[h.Typeflag], old.name)
		}
		if old, ok := w.image[winFold(p)]; ok && (old.kind == tar.TypeDir) != (h.Typeflag == tar.TypeDir) {
			for k := range w.image {
				if strings.HasPrefix(k, winFold(p)+"/") {
					delete(w.image, k)
				}
			}
		}
		w.image[winFold(p)] = n
	}
	if !base && len(created) < 2 {
		return errors.New("empty layer: no Hives and Files")
	}
	return nil
}

// finish checks what needs the whole image: each link typed as its target
// is, when the image holds the target.
func (w *winImport) finish() error {
	for _, n := range w.image {
		if n.kind != tar.TypeSymlink || n.untyped {
			continue
		}
		kind, ok := w.resolve(path.Join(path.Dir(n.name), n.link), 0)
		if !ok {
			continue
		}
		if (kind == tar.TypeDir) != n.dir {
			return fmt.Errorf("Files/%s: link to %s, a %s, typed as a directory link: %v", n.name, n.link, map[byte]string{'0': "file", '5': "directory"}[kind], n.dir)
		}
	}
	return nil
}

func (w *winImport) resolve(p string, hops int) (byte, bool) {
	if hops > 63 {
		return 0, false
	}
	p = path.Clean(p)
	if p == "." {
		return tar.TypeDir, true
	}
	if strings.HasPrefix(p, "../") || p == ".." {
		return 0, false
	}
	comps := strings.Split(p, "/")
	for i := range comps {
		cur := strings.Join(comps[:i+1], "/")
		n, ok := w.image[winFold(cur)]
		if !ok {
			return 0, false
		}
		if n.kind == tar.TypeSymlink {
			rest := append([]string{path.Dir(cur), n.link}, comps[i+1:]...)
			return w.resolve(path.Join(rest...), hops+1)
		}
		if i == len(comps)-1 {
			return n.kind, true
		}
		if n.kind != tar.TypeDir {
			return 0, false
		}
	}
	return 0, false
}

// winLinkTarget: the target becomes a reparse point's substitute name as
// it is; it stays relative and inside C:\ (Files/), and is not prefixed.
func winLinkTarget(t string) error {
	s := strings.ReplaceAll(t, `\`, "/")
	switch {
	case s == "":
		return errors.New("empty symlink target")
	case strings.HasPrefix(s, "Files/"):
		return fmt.Errorf("symlink target %q carries the Files/ prefix (BuildKit's bug)", t)
	case strings.HasPrefix(s, "/"), strings.Contains(s, ":"):
		return fmt.Errorf("symlink target %q is not relative", t)
	case strings.Contains(t, "/"):
		// go-winio puts the target into the reparse point as it is, and
		// Windows resolves a relative one only through ''.
		return fmt.Errorf("symlink target %q holds '/', which Windows does not follow", t)
	}
	return winReparseFits(t)
}

// winReparseFits says why a symlink target cannot be the reparse point
// go-winio encodes for it: none, or too long for its buffer (header,
// flags, and the target twice with a NUL each, within
// MAXIMUM_REPARSE_DATA_BUFFER_SIZE).
func winReparseFits(t string) error {
	switch n := len(utf16.Encode([]rune(t))); {
	case t == "":
		return errors.New("empty symlink target")
	case 20+4*(n+1) > 16<<10:
		return fmt.Errorf("symlink target of %d UTF-16 units does not fit a reparse point", n)
	}
	return nil
}

var winReserved = regexp.MustCompile(`(?i)^(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|COM[0-9¹²³]|LPT[0-9¹²³]) *(\..*)?$`)

// winComponent says why Windows cannot create a file named c as written.
func winComponent(c string) error {
	switch {
	case c == "" || c == "." || c == "..":
		return fmt.Errorf("component %q", c)
	case !utf8.ValidString(c):
		return fmt.Errorf("component %q is not UTF-8", c)
	case strings.ContainsAny(c, `<>:"\|?*`):
		return fmt.Errorf("component %q has a character Windows refuses", c)
	case strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 }):
		return fmt.Errorf("component %q has a control character", c)
	case strings.HasSuffix(c, ".") || strings.HasSuffix(c, " "):
		return fmt.Errorf("component %q ends with a dot or a space", c)
	case winReserved.MatchString(c):
		return fmt.Errorf("component %q is a device name", c)
	case len(utf16.Encode([]rune(c))) > 255:
		return fmt.Errorf("component of %d UTF-16 units: NTFS names hold 255", len(utf16.Encode([]rune(c))))
	}
	return nil
}

// parseSD reads a self-relative security descriptor as
// RtlValidRelativeSecurityDescriptor would.
func parseSD(b []byte) error {
	if len(b) < 20 {
		return fmt.Errorf("%d bytes", len(b))
	}
	if b[0] != 1 || b[1] != 0 {
		return fmt.Errorf("revision %d sbz1 %d", b[0], b[1])
	}
	ctl := binary.LittleEndian.Uint16(b[2:])
	const (
		ownerDefaulted = 0x1
		daclPresent    = 0x4
		saclPresent    = 0x10
		selfRelative   = 0x8000
	)
	if ctl&selfRelative == 0 {
		return errors.New("not self-relative")
	}
	off := func(at int) int { return int(binary.LittleEndian.Uint32(b[at:])) }
	owner, group, sacl, dacl := off(4), off(8), off(12), off(16)
	if owner == 0 || group == 0 {
		return errors.New("no owner or group")
	}
	for _, o := range []int{owner, group} {
		if o < 20 || o%4 != 0 {
			return fmt.Errorf("SID offset %d", o)
		}
		if _, err := sidAt(b, o); err != nil {
			return err
		}
	}
	if (ctl&saclPresent != 0) != (sacl != 0) {
		return fmt.Errorf("SACL offset %d with control %#x", sacl, ctl)
	}
	if ctl&daclPresent == 0 || dacl == 0 {
		return errors.New("no DACL: everyone gets full access")
	}
	if dacl < 20 || dacl%4 != 0 || dacl+8 > len(b) {
		return fmt.Errorf("DACL offset %d", dacl)
	}
	a := b[dacl:]
	if a[0] != 2 && a[0] != 4 || a[1] != 0 {
		return fmt.Errorf("ACL revision %d", a[0])
	}
	size, count := int(binary.LittleEndian.Uint16(a[2:])), int(binary.LittleEndian.Uint16(a[4:]))
	if size < 8 || size > len(a) || size%4 != 0 {
		return fmt.Errorf("ACL size %d (%d bytes left)", size, len(a))
	}
	p := 8
	for i := 0; i < count; i++ {
		if p+8 > size {
			return fmt.Errorf("ACE %d past the ACL", i)
		}
		typ, asz := a[p], int(binary.LittleEndian.Uint16(a[p+2:]))
		if asz < 16 || asz%4 != 0 || p+asz > size {
			return fmt.Errorf("ACE %d size %d", i, asz)
		}
		if typ != 0 && typ != 1 {
			return fmt.Errorf("ACE %d type %d", i, typ)
		}
		n, err := sidAt(a[:p+asz], p+8)
		if err != nil {
			return fmt.Errorf("ACE %d: %v", i, err)
		}
		if 8+n != asz {
			return fmt.Errorf("ACE %d size %d, SID of %d", i, asz, n)
		}
		p += asz
	}
	if p != size {
		return fmt.Errorf("ACEs end at %d, ACL size %d", p, size)
	}
	return nil
}

func sidAt(b []byte, o int) (int, error) {
	if o+8 > len(b) || b[o] != 1 || b[o+1] > 15 {
		return 0, fmt.Errorf("SID at %d malformed", o)
	}
	n := 8 + 4*int(b[o+1])
	if o+n > len(b) {
		return 0, fmt.Errorf("SID at %d truncated", o)
	}
	return n, nil
}

// The reader refuses what the importer would: each case is a good layer
// with one thing wrong.
func TestWindowsCheckerRefuses(t *testing.T) {
	rec := func(attr, sd string) map[string]string {
		return map[string]string{"MSWINDOWS.fileattr": attr, "MSWINDOWS.rawsd": sd, "LIBARCHIVE.creationtime": "0"}
	}
	dir := func(name string) *tar.Header {
		return &tar.Header{Name: name + "/", Typeflag: tar.TypeDir, PAXRecords: rec("16", buildkitDirSD)}
	}
	file := func(name string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, PAXRecords: rec("32", buildkitFileSD)}
	}
	with := func(h *tar.Header, f func(h *tar.Header)) *tar.Header { f(h); return h }
	roots := func() []*tar.Header {
		return []*tar.Header{
			{Name: "Hives/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "16", "LIBARCHIVE.creationtime": "0"}},
			{Name: "Files/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "16", "LIBARCHIVE.creationtime": "0"}},
		}
	}
	sd, _ := base64.StdEncoding.DecodeString(buildkitFileSD)
	badSD := func(f func(b []byte) []byte) string {
		return base64.StdEncoding.EncodeToString(f(bytes.Clone(sd)))
	}
	for _, tc := range []struct {
		want string
		hdrs []*tar.Header
	}{
		{"", []*tar.Header{dir("Files/a"), file("Files/a/x.exe"), with(file("Files/a/l"), func(h *tar.Header) {
			h.Typeflag, h.Linkname, h.PAXRecords["MSWINDOWS.fileattr"] = tar.TypeSymlink, "x.exe", "1056"
		}), with(file("Files/a/h"), func(h *tar.Header) { h.Typeflag, h.Linkname = tar.TypeLink, "Files/a/x.exe" })}},
		{"parent Files/a not created", []*tar.Header{file("Files/a/x.exe")}},
		{"created twice", []*tar.Header{dir("Files/a"), file("Files/a/X.exe"), file("Files/A/x.EXE")}},
		{"outside Files/", []*tar.Header{file("x.exe")}},
		{"created twice", []*tar.Header{dir("Files/a"), file("Files/a.$wcidirs$")}},
		{"its metadata file Files/a.$wcidirs$ exists", []*tar.Header{file("Files/a.$wcidirs$"), dir("Files/a")}},
		{"MSWINDOWS.fileattr \"0x20\"", []*tar.Header{with(file("Files/x"), func(h *tar.Header) { h.PAXRecords["MSWINDOWS.fileattr"] = "0x20" })}},
		{"a file with attributes 0x10", []*tar.Header{with(file("Files/x"), func(h *tar.Header) { h.PAXRecords["MSWINDOWS.fileattr"] = "16" })}},
		{"a symlink without FILE_ATTRIBUTE_REPARSE_POINT", []*tar.Header{with(file("Files/l"), func(h *tar.Header) { h.Typeflag, h.Linkname = tar.TypeSymlink, "x" })}},
		{"Files/ prefix", []*tar.Header{with(file("Files/l"), func(h *tar.Header) {
			h.Typeflag, h.Linkname, h.PAXRecords["MSWINDOWS.fileattr"] = tar.TypeSymlink, "Files/x", "1056"
		})}},
		{"does not fit a reparse point", []*tar.Header{with(file("Files/l"), func(h *tar.Header) {
			h.Typeflag, h.Linkname, h.PAXRecords["MSWINDOWS.fileattr"] = tar.TypeSymlink, strings.Repeat("x", 4091), "1056"
		})}},
		{"not relative", []*tar.Header{with(file("Files/l"), func(h *tar.Header) {
			h.Typeflag, h.Linkname, h.PAXRecords["MSWINDOWS.fileattr"] = tar.TypeSymlink, `C:\x`, "1056"
		})}},
		{"which Windows does not follow", []*tar.Header{with(file("Files/l"), func(h *tar.Header) {
			h.Typeflag, h.Linkname, h.PAXRecords["MSWINDOWS.fileattr"] = tar.TypeSymlink, "d/x.exe", "1056"
		})}},
		{"hard link target \"Files/y\" is not a file added before it", []*tar.Header{with(file("Files/h"), func(h *tar.Header) { h.Typeflag, h.Linkname = tar.TypeLink, "Files/y" })}},
		{"invalid hard link", []*tar.Header{file("Files/y"), with(file("Files/h"), func(h *tar.Header) { h.Typeflag, h.Linkname = tar.TypeLink, "y" })}},
		{"a whiteout", []*tar.Header{file("Files/.wh.x")}},
		{"ends with a dot", []*tar.Header{file("Files/x.")}},
		{"device name", []*tar.Header{file("Files/aux.txt")}},
		{"NTFS names hold 255", []*tar.Header{file("Files/" + strings.Repeat("x", 256))}},
		{"LIBARCHIVE.creationtime \"yesterday\"", []*tar.Header{with(file("Files/x"), func(h *tar.Header) { h.PAXRecords["LIBARCHIVE.creationtime"] = "yesterday" })}},
		{"outside what go-winio converts", []*tar.Header{with(file("Files/x"), func(h *tar.Header) { h.ModTime = time.Unix(253402300799, 0) })}},
		{"no MSWINDOWS.rawsd", []*tar.Header{with(file("Files/x"), func(h *tar.Header) { delete(h.PAXRecords, "MSWINDOWS.rawsd") })}},
		{"revision 2", []*tar.Header{with(file("Files/x"), func(h *tar.Header) {
			h.PAXRecords["MSWINDOWS.rawsd"] = badSD(func(b []byte) []byte { b[0] = 2; return b })
		})}},
		{"not self-relative", []*tar.Header{with(file("Files/x"), func(h *tar.Header) {
			h.PAXRecords["MSWINDOWS.rawsd"] = badSD(func(b []byte) []byte { b[3] = 0; return b })
		})}},
		{"SID at 20 malformed", []*tar.Header{with(file("Files/x"), func(h *tar.Header) {
			h.PAXRecords["MSWINDOWS.rawsd"] = badSD(func(b []byte) []byte { b[20] = 9; return b })
		})}},
		{"ACL size 76 (56 bytes left)", []*tar.Header{with(file("Files/x"), func(h *tar.Header) {
			h.PAXRecords["MSWINDOWS.rawsd"] = badSD(func(b []byte) []byte { return b[:len(b)-20] })
		})}},
		{"no DACL", []*tar.Header{with(file("Files/x"), func(h *tar.Header) {
			h.PAXRecords["MSWINDOWS.rawsd"] = badSD(func(b []byte) []byte { b[2] &^= 4; return b })
		})}},
		{"not BuildKit's file descriptor", []*tar.Header{with(file("Files/x"), func(h *tar.Header) { h.PAXRecords["MSWINDOWS.rawsd"] = buildkitDirSD })}},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range append(roots(), tc.hdrs...) {
			h.Format = tar.FormatPAX
			if h.ModTime.IsZero() {
				h.ModTime = time.Unix(0, 0)
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		err := (&winImport{count: 1, image: map[string]*wnode{}}).layer(buf.Bytes())
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// A directory where a lower layer holds a directory link replaces the
// link on Windows, and a file where it holds a directory hides the
// directory: the reader refuses both, as what Docker's COPY would not have
// written.
func TestWindowsCheckerRefusesDirOverLink(t *testing.T) {
	layer := func(hdrs ...*tar.Header) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range append([]*tar.Header{
			{Name: "Hives/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "16"}},
			{Name: "Files/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "16"}},
		}, hdrs...) {
			h.Format, h.ModTime = tar.FormatPAX, time.Unix(0, 0)
			if len(h.PAXRecords) == 1 && h.Name != "Hives/" && h.Name != "Files/" {
				h.PAXRecords["LIBARCHIVE.creationtime"] = "0"
				h.PAXRecords["MSWINDOWS.rawsd"] = map[bool]string{true: buildkitDirSD, false: buildkitFileSD}[h.PAXRecords["MSWINDOWS.fileattr"] != "32" && h.PAXRecords["MSWINDOWS.fileattr"] != "1056"]
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		return buf.Bytes()
	}
	d := func(name string) *tar.Header {
		return &tar.Header{Name: name + "/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "16"}}
	}
	link := func(name, target, attr string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, PAXRecords: map[string]string{"MSWINDOWS.fileattr": attr}}
	}
	w := &winImport{count: 1, image: map[string]*wnode{}}
	if err := w.layer(layer(d("Files/k"), d("Files/k/data"), link("Files/k/todir", "data", "1040"))); err != nil {
		t.Fatal(err)
	}
	if err := w.layer(layer(d("Files/k"), d("Files/k/TODIR"))); err == nil || !strings.Contains(err.Error(), "a directory over the directory link k/todir -> data") {
		t.Errorf("got %v", err)
	}
	file := &tar.Header{Name: "Files/K/Data", Typeflag: tar.TypeReg, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "32"}}
	if err := w.layer(layer(d("Files/K"), file)); err == nil || !strings.Contains(err.Error(), "a file over the directory k/data of a lower layer") {
		t.Errorf("got %v", err)
	}
}

// A base layer's link may lead anywhere, typed or not, but hcsshim's base
// writer still sets its reparse point as go-winio encodes it: a target
// that is none, or too long for the buffer, fails the import.
func TestWindowsCheckerBaseLinks(t *testing.T) {
	for _, tc := range []struct{ target, attr, want string }{
		{`C:\ProgramData`, "1040", ""},
		{`\Windows`, "", ""},
		{"", "1040", "empty symlink target"},
		{"", "", "empty symlink target"},
		{`C:\` + strings.Repeat("x", 4091), "1040", "does not fit a reparse point"},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		l := &tar.Header{Name: "Files/l", Typeflag: tar.TypeSymlink, Linkname: tc.target, Format: tar.FormatPAX, ModTime: time.Unix(0, 0)}
		if tc.attr != "" {
			l.PAXRecords = map[string]string{"MSWINDOWS.fileattr": tc.attr}
		}
		for _, h := range []*tar.Header{{Name: "Files/", Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}, l} {
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		err := (&winImport{image: map[string]*wnode{}}).layer(buf.Bytes())
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%.20q %s: got %v, want %q", tc.target, tc.attr, err, tc.want)
		}
	}
}
