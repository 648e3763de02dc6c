package image

import (
	"archive/tar"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/tree"
)

// WindowsBaseView is BaseView for a Windows base: the file system is what
// its layers hold under Files/ (C:\ at run time), without that prefix;
// the registry hives under Hives/, and anything else (a base layer's
// UtilityVM/), are left out. Its layers are applied as the Windows
// importer applies them (winEntry), and a base that importer fails on,
// or would make other files of than the view says, is refused naming the
// layer and the entry. A name is one whatever its case, as on NTFS: the
// view holds it once, spelled as a directory's first layer spells it, or
// as the last file or link there. Its Links are every symlink,
// each to its target as written, unresolved: Windows reads a target
// otherwise than Linux (see the build's windowsView). Foreign
// (non-distributable) layers, which Windows bases such as nanoserver and
// servercore have started with, are never downloaded: what they hold is
// not in the view (ForeignLayers counts them).
func WindowsBaseView(img v1.Image, maxBytes, maxWindow int64) (*tree.View, error) {
	return baseView(img, maxBytes, maxWindow, true)
}

// ForeignLayers counts img's foreign (non-distributable) layers, which
// BaseView and WindowsBaseView do not read.
func ForeignLayers(img v1.Image) int {
	layers, err := img.Layers()
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range layers {
		if mt, err := l.MediaType(); err == nil && !mt.IsDistributable() {
			n++
		}
	}
	return n
}

// winState is what applying a Windows base's layers as the Windows
// importer does needs besides the view's nodes. hcsshim's importer
// (ociwclayer.ImportLayerFromTar) creates every entry of a layer with a
// create-new call in that layer's own directory: the image's first layer
// by its base layer writer, into the layer itself, any other by its
// legacy writer, into an empty import directory, on NTFS, which finds
// names without case. So within a layer, a name may come once, after its
// parent, listed as a directory; it never writes through a link
// (OBJ_DONT_REPARSE). Across layers, a path is one whatever its case.
type winState struct {
	// created is what the layer being applied has made, by
	// layer.NTFSKey of its tar name; exact the same names as written,
	// as the legacy writer finds a hard link's target it added
	// (addedFiles, a Go map). whited are the names its whiteouts
	// remove, by key.
	created map[string]winCreated
	exact   map[string]bool
	whited  map[string]bool
	// below is what the lower layers held, at the start of this one,
	// at each key of the view this layer has since removed or replaced
	// (by kind: a tar typeflag), where the legacy writer looks for a
	// hard link's target it did not add by that exact name
	// (LstatRelative in the parent layers' directories).
	below map[string]byte
	// spell is the path the view holds under each key: the first
	// spelling of a directory, which later layers' directories merge
	// into, or the last file's or link's.
	spell map[string]string
	// uvm is the utility VM the layer below holds in its own directory,
	// by layer.NTFSKey of each path from UtilityVM/Files down, each's
	// kind (a tar typeflag); nil if that layer holds none, and
	// uvmUnknown if it is a foreign layer, never read. A layer above
	// the first holds one only once it lists UtilityVM: hcsshim's
	// legacy writer then clones the one below into it (initUtilityVM:
	// cloneTree from parentRoots[0], the layer right below, as Docker
	// and containerd order a layer's parents), before its own entries
	// change it. The clone is the one below taken over, not copied:
	// no layer above looks at that one again. uvmHere is the layer
	// being applied's, and uvmLinks the hard links it names there,
	// made when it closes.
	uvm, uvmHere           uvmTree
	uvmUnknown, uvmHereUnk bool
	uvmLinks               []string
	// last is the index of the layer applied last, -1 before the first.
	last int
	// dirs are the descriptors and attributes of the view's directories,
	// by the path it holds each by, as the layer that listed it last
	// gives them (tree.View.WinDirs); one a directory since replaced or
	// removed may linger, which the view leaves out. interned holds each
	// once.
	dirs     map[string]*tree.WinDir
	interned map[tree.WinDir]*tree.WinDir
	// streamsOf is the tar name of the layer's last entry the importer
	// created from its header (no whiteout, no hard link): the regular
	// entries right after it named streamsOf:stream are its alternate
	// data streams, as go-winio's backuptar writes them (a download's
	// Zone.Identifier), which the importer writes into that file
	// (WriteBackupStreamFromTarFile), not as files of their own.
	streamsOf string
}

type winCreated struct {
	typ     byte // the tar typeflag, tar.TypeReg for any file
	spelled string
}

// uvmFilesKey is the key of UtilityVM/Files, which a layer's directory
// holds when it holds a utility VM.
var uvmFilesKey = layer.NTFSKey("UtilityVM/Files")

// inUVMFiles says whether key k is UtilityVM/Files or under it.
func inUVMFiles(k string) bool {
	return k == uvmFilesKey || strings.HasPrefix(k, uvmFilesKey+"/")
}

// layer starts the image's layer i.
func (w *winState) layer(i int) {
	w.created, w.exact, w.whited = map[string]winCreated{}, map[string]bool{}, map[string]bool{}
	w.below = map[string]byte{}
	w.streamsOf = ""
	if w.uvmHere != nil {
		for _, l := range w.uvmLinks {
			w.uvmHere.set(layer.NTFSKey(l), tar.TypeReg)
		}
	}
	switch {
	case i != w.last+1: // a foreign layer is right below
		w.uvm, w.uvmUnknown = nil, true
	case w.uvmHere.typ(uvmFilesKey) == 0:
		w.uvm, w.uvmUnknown = nil, w.uvmHereUnk
	default:
		w.uvm, w.uvmUnknown = w.uvmHere, false
	}
	w.uvmHere, w.uvmHereUnk, w.uvmLinks = nil, false, nil
	if i == 0 {
		w.uvmHere = uvmTree{}
	}
	w.last = i
}

// initUtilityVM is the legacy writer's initUtilityVM, for the entry (a
// whiteout's name or an entry's) that calls it: the layer's utility VM,
// at its first call, is a clone of the one the layer below holds, and the
// import fails if that layer holds none.
func (w *winState) initUtilityVM(entry string) error {
	switch {
	case w.uvmHere != nil || w.uvmHereUnk:
		return nil
	case w.uvmUnknown:
		w.uvmHereUnk = true
		return nil
	case w.uvm == nil:
		return fmt.Errorf("%.100s makes the Windows importer clone the utility VM of the layer right below into this one (initUtilityVM), and that layer holds no UtilityVM/Files: the import fails (cloning the parent utility VM image failed)", entry)
	}
	w.uvmHere, w.uvm = w.uvm, nil
	return nil
}

// uvmTree is a utility VM as a layer's directory holds it: each path
// from UtilityVM/Files down, by its layer.NTFSKey, with its kind and
// children, so that a whiteout or a replaced directory costs what it
// removes.
type uvmTree map[string]*uvmNode

type uvmNode struct {
	typ      byte // a tar typeflag
	children map[string]bool
}

// typ is the kind of what t holds at k, 0 for nothing.
func (t uvmTree) typ(k string) byte {
	if n := t[k]; n != nil {
		return n.typ
	}
	return 0
}

// set puts a typ at k, whose parent is there (or k is UtilityVM/Files).
func (t uvmTree) set(k string, typ byte) {
	n := t[k]
	if n == nil {
		n = &uvmNode{}
		t[k] = n
		if p := t[path.Dir(k)]; p != nil && k != uvmFilesKey {
			if p.children == nil {
				p.children = map[string]bool{}
			}
			p.children[k] = true
		}
	}
	n.typ = typ
}

// remove forgets k and what is under it.
func (t uvmTree) remove(k string) {
	if p := t[path.Dir(k)]; p != nil {
		delete(p.children, k)
	}
	todo := []string{k}
	for len(todo) > 0 {
		q := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if n := t[q]; n != nil {
			for c := range n.children {
				todo = append(todo, c)
			}
		}
		delete(t, q)
	}
}

// winUVMEntry applies an entry of a layer above the first named under
// UtilityVM/ (so spelled: the legacy writer compares the prefix as
// written), as that writer does, or says why the import fails. It writes
// such an entry into the layer's own utility VM, cloned from the one
// below when an entry named exactly "UtilityVM" came first (its Add
// compares that name before cleaning it: "UtilityVM/" is a directory of
// the import like any other, and no clone), and only under
// UtilityVM/Files. Into a clone, an entry's parent may be the clone's,
// and a later entry replaces an earlier one: the one-entry-a-name and
// parent-listed rules of the layer's other entries do not hold. A hard
// link named there is made when the layer closes, into the same.
func (b *baseFS) winUVMEntry(hdr *tar.Header, name string) error {
	w := b.win
	k := layer.NTFSKey(name)
	if hdr.Typeflag == tar.TypeLink {
		if err := b.winHardLink(hdr.Name, hdr.Linkname); err != nil {
			return err
		}
		if err := w.uvmParent(name); err != nil {
			return err
		}
		w.uvmLinks = append(w.uvmLinks, name)
		w.created[k] = winCreated{tar.TypeReg, name}
		// AddLink keeps the name as written.
		w.exact[name] = strings.ReplaceAll(hdr.Name, `\`, "/") == name
		return nil
	}
	if w.uvmHere == nil && !w.uvmHereUnk {
		return errors.New("an entry under UtilityVM/ in a layer above the first, before the entry named UtilityVM (exactly so, without a '/'): hcsshim's legacy writer fails (missing UtilityVM directory)")
	}
	if name != "UtilityVM/Files" && !strings.HasPrefix(name, "UtilityVM/Files/") {
		return errors.New("an entry under UtilityVM/ but not under UtilityVM/Files/, in a layer above the first: hcsshim's legacy writer fails (invalid UtilityVM layer)")
	}
	if err := winAttributes(hdr); err != nil {
		return err
	}
	typ := byte(tar.TypeReg)
	switch hdr.Typeflag {
	case tar.TypeDir:
		typ = tar.TypeDir
	case tar.TypeSymlink:
		if hdr.Linkname == "" {
			return errors.New("a symbolic link with no target, which go-winio cannot write as a reparse point: the Windows importer fails")
		}
		typ = tar.TypeSymlink
	}
	if err := w.uvmParent(name); err != nil {
		return err
	}
	switch n := w.uvmHere[k]; {
	case n == nil:
	case winDirAttr(hdr):
		// Made as a directory (a directory link among them): what is
		// there of another kind goes with all it holds
		// (RemoveAllRelative); a directory over a directory keeps its
		// files.
		if n.typ != typ {
			w.uvmHere.remove(k)
		}
	case n.typ == tar.TypeDir && len(n.children) > 0:
		return fmt.Errorf("a file over the directory %.100s of the layer's utility VM, which holds files: hcsshim's legacy writer removes what is there first, and fails (the directory is not empty)", name)
	}
	if w.uvmHere != nil {
		w.uvmHere.set(k, typ)
	}
	w.created[k] = winCreated{typ, name}
	w.exact[name] = true
	w.streamsOf = hdr.Name
	return nil
}

// uvmParent says why the legacy writer cannot make name, under
// UtilityVM/Files/, in the layer's utility VM: its parent is not a
// directory there.
func (w *winState) uvmParent(name string) error {
	if w.uvmHereUnk || layer.NTFSKey(name) == uvmFilesKey {
		return nil
	}
	if w.uvmHere == nil {
		return fmt.Errorf("%.100s is made in the layer's utility VM, and the layer has none (no entry named UtilityVM came before): the Windows importer fails (the system cannot find the path specified)", name)
	}
	parent := path.Dir(name)
	switch w.uvmHere.typ(layer.NTFSKey(parent)) {
	case tar.TypeDir:
		return nil
	case 0:
		return fmt.Errorf("its parent %.100s is not in the layer's utility VM (the one below, cloned, with the layer's entries before it): the Windows importer fails (the system cannot find the path specified)", parent)
	case tar.TypeSymlink:
		return fmt.Errorf("its parent %.100s is a link of the layer's utility VM: the Windows importer does not write through links, and fails (reparse point encountered)", parent)
	default:
		return fmt.Errorf("its parent %.100s is a file of the layer's utility VM, no directory: the Windows importer fails", parent)
	}
}

// winTarName is a Windows layer's tar name as hcsshim reads it: '\' and
// '/' both separate (filepath.FromSlash leaves a '\' to Windows, which
// splits on it), cleaned as filepath.Clean does. A name it cannot create
// relative to the layer is refused.
func winTarName(n string) (string, error) {
	s := strings.ReplaceAll(n, `\`, "/")
	if strings.HasPrefix(s, "/") {
		return "", errors.New("an absolute name, which the Windows importer refuses (expected relative path)")
	}
	switch p := path.Clean(s); {
	case p == ".":
		return "", errors.New("a name for the layer's root, which the Windows importer cannot create: it is there already")
	case p == ".." || strings.HasPrefix(p, "../"):
		return "", errors.New("a name above the layer's root, which the Windows importer cannot create")
	default:
		return p, nil
	}
}

// winEntry applies one entry of a Windows base's layer, as hcsshim's
// importer would, or says why that import fails, or makes what the view
// holds differ from what Windows holds: the image would fail where it is
// pulled, or run on other files than pallet placed its own by. The view
// holds what is under Files/ (C:\), without the prefix; what is under
// Hives/ and UtilityVM/ is only checked (the utility VM, as each layer
// holds it, to check what names it: winState.uvm).
func (b *baseFS) winEntry(hdr *tar.Header) error {
	w := b.win
	if w.streamsOf != "" && hdr.Typeflag == tar.TypeReg && strings.HasPrefix(hdr.Name, w.streamsOf+":") {
		return nil
	}
	w.streamsOf = ""
	name, err := winTarName(hdr.Name)
	if err != nil {
		return err
	}
	top, rest, _ := strings.Cut(name, "/")
	inFiles := strings.EqualFold(top, "Files")
	if !inFiles && !strings.EqualFold(top, "Hives") && !strings.EqualFold(top, "UtilityVM") {
		return fmt.Errorf("%.100s is outside Files/, Hives/ and UtilityVM/, where a Windows layer holds everything (a Linux layer's name?)", name)
	}
	// The bounds of an archive's entries, on the path under C:\ for
	// what is there.
	bounded := name
	if inFiles && rest != "" {
		bounded = rest
	}
	if err := checkEntry(&tar.Header{Name: bounded, Linkname: hdr.Linkname}, true); err != nil {
		return err
	}
	if hidden, ok := strings.CutPrefix(path.Base(name), ".wh."); ok {
		return b.winWhiteout(name, hidden)
	}
	if err := layer.NTFSName(name); err != nil {
		return err
	}
	if b.layer > 0 && strings.HasPrefix(name, "UtilityVM/") {
		return b.winUVMEntry(hdr, name)
	}
	k := layer.NTFSKey(name)
	if c, ok := w.created[k]; ok {
		return fmt.Errorf("a second entry for %.100s in one layer (names compared without case, as NTFS does: %.100s): the Windows importer creates each new, and fails (file exists)", name, c.spelled)
	}
	if w.whited[k] {
		return fmt.Errorf("%.100s is whited out by this layer too: the Windows importer removes a layer's whiteouts after its files, its own among them, where containerd on Linux hides only what lower layers hold", name)
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		parent := name[:i]
		switch c, ok := w.created[layer.NTFSKey(parent)]; {
		case !ok:
			return fmt.Errorf("its parent %.100s is no directory listed before it in this layer: the Windows importer creates each entry in the layer's own directory, and fails (the system cannot find the path specified)", parent)
		case c.typ == tar.TypeSymlink:
			return fmt.Errorf("its parent %.100s is a link of this layer: the Windows importer does not write through links, and fails (reparse point encountered)", parent)
		case c.typ != tar.TypeDir:
			return fmt.Errorf("its parent %.100s is a file of this layer, no directory: the Windows importer fails", parent)
		}
	}
	if err := winAttributes(hdr); err != nil {
		return err
	}
	typ := hdr.Typeflag
	switch typ {
	case tar.TypeDir, tar.TypeSymlink:
	case tar.TypeLink:
		if err := b.winHardLink(hdr.Name, hdr.Linkname); err != nil {
			return err
		}
		typ = tar.TypeReg
	default:
		// A device, fifo or anything else is made an empty file:
		// go-winio writes no other kind.
		typ = tar.TypeReg
	}
	if typ == tar.TypeSymlink && hdr.Linkname == "" {
		return errors.New("a symbolic link with no target, which go-winio cannot write as a reparse point: the Windows importer fails")
	}
	switch {
	case b.layer == 0 && inUVMFiles(k):
		w.uvmHere.set(k, typ)
	case b.layer > 0 && hdr.Name == "UtilityVM":
		if err := w.initUtilityVM(`the entry "UtilityVM"`); err != nil {
			return err
		}
	}
	w.created[k] = winCreated{typ, name}
	// The legacy writer keeps a hard link's name as written, '/' made
	// '\', where it cleans any other (Add): a later link finds it only
	// so.
	if hdr.Typeflag != tar.TypeLink || strings.ReplaceAll(hdr.Name, `\`, "/") == name {
		w.exact[name] = true
	}
	if hdr.Typeflag != tar.TypeLink {
		w.streamsOf = hdr.Name
	}
	if !inFiles || rest == "" {
		return nil
	}
	// The parent is a directory this layer listed, so the view holds
	// it, under the spelling it holds it by.
	p := rest
	if dir, base := path.Split(rest); dir != "" {
		p = w.spell[layer.NTFSKey(strings.TrimSuffix(dir, "/"))] + "/" + base
	}
	old, had := w.spell[layer.NTFSKey(p)]
	if had {
		if n := b.nodes[old]; typ == tar.TypeDir && n.dir {
			n.meta = dirMeta(hdr)
			return w.dirRecords(old, hdr)
		}
		b.remove(old)
	}
	switch typ {
	case tar.TypeDir:
		b.add(p, &node{dir: true, meta: dirMeta(hdr)})
		return w.dirRecords(p, hdr)
	case tar.TypeSymlink:
		b.add(p, &node{link: hdr.Linkname})
	default:
		b.add(p, &node{})
	}
	return nil
}

// dirRecords keeps what the directory entry hdr, which the view holds at
// p, gives it: the Windows union shows a directory's descriptor and
// attributes from the top layer that lists it, so this one's replace the
// lower layers'. A directory without a descriptor (an empty one is none
// to go-winio) leaves the layer's writer to its own. One that is not
// base64, as go-winio reads it, fails the import.
func (w *winState) dirRecords(p string, hdr *tar.Header) error {
	sd, raw := hdr.PAXRecords["MSWINDOWS.rawsd"]
	if sddl := hdr.PAXRecords["MSWINDOWS.sd"]; !raw && sddl != "" {
		// go-winio falls back on the SDDL its writer put there before it
		// wrote raw descriptors. One pallet cannot read the same on every
		// machine (a domain's alias) leaves the layer's writer to its own.
		if b, err := layer.SecurityDescriptorFromSDDL(sddl); err == nil {
			sd = base64.StdEncoding.EncodeToString(b)
		}
	}
	if sd == "" {
		delete(w.dirs, p)
		return nil
	}
	d := tree.WinDir{RawSD: sd, Attr: 0x10} // FILE_ATTRIBUTE_DIRECTORY
	if s, ok := hdr.PAXRecords["MSWINDOWS.fileattr"]; ok {
		a, err := strconv.ParseUint(s, 10, 32) // checked by winAttributes
		if err != nil {
			return fmt.Errorf("its MSWINDOWS.fileattr %.40q is no 32-bit number, which go-winio refuses: the Windows importer fails", s)
		}
		d.Attr = uint32(a)
	}
	in := w.interned[d]
	if in == nil {
		if _, err := base64.StdEncoding.DecodeString(sd); err != nil {
			return fmt.Errorf("its MSWINDOWS.rawsd is not base64, which go-winio refuses: the Windows importer fails (%v)", err)
		}
		in = &d
		w.interned[d] = in
	}
	w.dirs[p] = in
	return nil
}

// viewDirs sets v.WinDirs from what the layers gave v's directories.
func (w *winState) viewDirs(v *tree.View) {
	for p, d := range w.dirs {
		if _, ok := v.Dirs[p]; ok {
			if v.WinDirs == nil {
				v.WinDirs = map[string]*tree.WinDir{}
			}
			v.WinDirs[p] = d
		}
	}
}

// winDirAttr says whether go-winio gives the entry
// FILE_ATTRIBUTE_DIRECTORY, by its MSWINDOWS.fileattr, else by its
// typeflag (FileInfoFromHeader): hcsshim's legacy writer makes such an
// entry of a utility VM as a directory, whatever its typeflag (a
// directory link's is a symlink's).
func winDirAttr(hdr *tar.Header) bool {
	if s, ok := hdr.PAXRecords["MSWINDOWS.fileattr"]; ok {
		attr, err := strconv.ParseUint(s, 10, 32)
		return err == nil && attr&0x10 != 0
	}
	return hdr.Typeflag == tar.TypeDir
}

// winAttributes refuses an entry whose Windows file attributes
// (MSWINDOWS.fileattr) go-winio cannot read, or that make it another
// kind than its typeflag: go-winio creates a directory by the attribute,
// not by the typeflag, so a directory entry without it is made a file,
// what the layer lists below it failing to import, and a file entry with
// it a directory, its content not written.
func winAttributes(hdr *tar.Header) error {
	s, ok := hdr.PAXRecords["MSWINDOWS.fileattr"]
	if !ok || hdr.Typeflag == tar.TypeLink { // a hard link is made of its target
		return nil
	}
	attr, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return fmt.Errorf("its MSWINDOWS.fileattr %.40q is no 32-bit number, which go-winio refuses: the Windows importer fails", s)
	}
	const directory = 0x10 // FILE_ATTRIBUTE_DIRECTORY
	switch dir := attr&directory != 0; {
	case hdr.Typeflag == tar.TypeDir && !dir:
		return fmt.Errorf("a directory whose MSWINDOWS.fileattr (%d) lacks FILE_ATTRIBUTE_DIRECTORY: the Windows importer makes it a file", attr)
	case hdr.Typeflag != tar.TypeDir && hdr.Typeflag != tar.TypeSymlink && dir:
		return fmt.Errorf("a file whose MSWINDOWS.fileattr (%d) has FILE_ATTRIBUTE_DIRECTORY: the Windows importer makes it a directory", attr)
	}
	return nil
}

// winWhiteout applies the whiteout name of hidden, as hcsshim's importer
// does: its Remove of the path joined, a tombstone under Files/ above
// the first layer, or says why the import fails or would not hide what
// the whiteout names.
func (b *baseFS) winWhiteout(name, hidden string) error {
	w := b.win
	if b.layer == 0 {
		return errors.New("a whiteout in the image's first layer, which Windows imports as a base layer: hcsshim refuses it (base layer cannot have tombstones)")
	}
	switch hidden {
	case "", ".", "..":
		return fmt.Errorf("a whiteout of %q, which names no entry of its directory: hcsshim would take it for the directory or its parent, containerd on Linux refuses the layer (invalid whiteout name)", hidden)
	case ".wh..opq":
		return errors.New("an opaque whiteout, which the Windows importer does not apply: hcsshim takes it for the whiteout of a file named .wh..opq, and what lower layers hold in the directory stays")
	}
	target := path.Join(path.Dir(name), hidden)
	if err := layer.NTFSName(target); err != nil {
		return fmt.Errorf("a whiteout of %.100s: %w", target, err)
	}
	// hcsshim compares the prefix as written.
	if !strings.HasPrefix(target, "Files/") && !strings.HasPrefix(target, "UtilityVM/Files/") {
		return fmt.Errorf("a whiteout of %.100s, which is not under Files/ (so spelled): hcsshim refuses it (invalid tombstone)", target)
	}
	if strings.HasPrefix(target, "UtilityVM/") {
		return w.uvmWhiteout(target)
	}
	k := layer.NTFSKey(target)
	if c, ok := w.created[k]; ok {
		return fmt.Errorf("a whiteout of %.100s, which this layer holds: the Windows importer removes a layer's whiteouts after its files, its own among them, where containerd on Linux hides only what lower layers hold", c.spelled)
	}
	w.whited[k] = true
	if rest, ok := strings.CutPrefix(target, "Files/"); ok {
		if q, ok := w.spell[layer.NTFSKey(rest)]; ok {
			b.remove(q)
		}
	}
	return nil
}

// uvmWhiteout applies a whiteout of target, under UtilityVM/Files/, as
// the legacy writer's Remove does: at once, in the layer's own utility
// VM (cloned from the one below at the first call), where it must be.
func (w *winState) uvmWhiteout(target string) error {
	if err := w.initUtilityVM(fmt.Sprintf("a whiteout of %.100s", target)); err != nil {
		return err
	}
	if w.uvmHere == nil {
		return nil // cloned from a foreign layer, never read
	}
	k := layer.NTFSKey(target)
	if w.uvmHere.typ(k) == 0 {
		return fmt.Errorf("a whiteout of %.100s, which the layer's utility VM (the one below, cloned, with the layer's entries before it) does not hold: hcsshim's legacy writer removes it there at once, and fails (the system cannot find the file specified)", target)
	}
	w.uvmHere.remove(k)
	// Gone at once, its name may be made again.
	delete(w.created, k)
	return nil
}

// winHardLink refuses a hard link name => linkname (as the tar header
// gives them) that hcsshim's importer fails to make. In the first layer,
// its base layer writer links to what the layer made before it, wherever
// it is; above it, its legacy writer (legacyLayerWriter.AddLink) links
// only within Files/ (or UtilityVM/Files/), spelled so, to what the
// layer made before it, found by its exact name, or else to what a lower
// layer holds, found without case; a target under UtilityVM/Files/ only
// in the layer's own utility VM (its directory, destRoot), the one below
// cloned into it with the layer's entries before the link. AddLink
// cleans the target (filepath.Clean: "./Files/x" is Files/x) but not the
// name, whose prefix it compares as written: "./Files/h" is no name
// under Files/. The target is opened without following links
// (OBJ_DONT_REPARSE), so a link to a link fails, and NTFS links no
// directory. A target in a foreign layer, never read, is not checked.
func (b *baseFS) winHardLink(name, linkname string) error {
	w := b.win
	name = strings.ReplaceAll(name, `\`, "/")
	target, err := winTarName(linkname)
	if err == nil {
		err = layer.NTFSName(target)
	}
	if err != nil {
		return fmt.Errorf("a hard link to %.100q: %w", linkname, err)
	}
	within := func(s string) bool { return strings.HasPrefix(s, "Files/") || strings.HasPrefix(s, "UtilityVM/Files/") }
	if b.layer > 0 && !within(name) {
		return fmt.Errorf("a hard link named %.100s: above the image's first layer, hcsshim links only names under Files/ or UtilityVM/Files/, so spelled and compared as written, not cleaned (invalid hard link in layer)", name)
	}
	if b.layer > 0 && !within(target) {
		return fmt.Errorf("a hard link to %.100s: above the image's first layer, hcsshim links only within Files/ or UtilityVM/Files/, so spelled (invalid hard link in layer)", target)
	}
	kind := func(dir, link bool) error {
		switch {
		case dir:
			return fmt.Errorf("a hard link to the directory %.100s, which NTFS cannot make: the Windows importer fails", target)
		case link:
			return fmt.Errorf("a hard link to the link %.100s, which hcsshim opens without following links, and fails (reparse point encountered)", target)
		}
		return nil
	}
	c, made := w.created[layer.NTFSKey(target)]
	if made && (b.layer == 0 || w.exact[target]) {
		return kind(c.typ == tar.TypeDir, c.typ == tar.TypeSymlink)
	}
	if b.layer == 0 {
		return fmt.Errorf("a hard link to %.100s, which no earlier entry of the layer holds: Windows imports the image's first layer as a base layer, which links to its own files, and fails", target)
	}
	if strings.HasPrefix(target, "UtilityVM/") {
		// AddLink looks for it in the layer's own directory only
		// (roots = destRoot), which holds the layer's utility VM.
		typ := w.uvmHere.typ(layer.NTFSKey(target))
		switch {
		case w.uvmHereUnk:
			return nil // cloned from a foreign layer, never read
		case w.uvmHere == nil:
			return fmt.Errorf("a hard link to %.100s: above the first layer, hcsshim looks for a target under UtilityVM/Files/ in the layer's own utility VM only, which it has once an entry named UtilityVM (or a whiteout under it) came before, cloned from the layer below; this one has none: the import fails (failed to find link target)", target)
		case typ == 0:
			return fmt.Errorf("a hard link to %.100s, which the layer's utility VM (the one below, cloned, with the layer's entries before it) does not hold: the Windows importer fails (failed to find link target)", target)
		}
		return kind(typ == tar.TypeDir, typ == tar.TypeSymlink)
	}
	rest := strings.TrimPrefix(target, "Files/")
	// Not added by that exact name, the target is looked up in the
	// lower layers' directories, without case: one this layer spells
	// otherwise is linked to the lower layer's file it replaced, and
	// one this layer whites out is there still (its tombstones are
	// removed after, in this layer's directory).
	typ, ok := b.winBelow(rest)
	switch {
	case !ok && b.foreign > 0:
		return nil // it may be a foreign layer's, never read
	case !ok && made:
		return fmt.Errorf("a hard link to %.100s, which this layer spells %.100s, and no lower layer holds: hcsshim finds a target of the same layer by its exact name only, and else in lower layers (failed to find link target)", target, c.spelled)
	case !ok:
		return fmt.Errorf("a hard link to %.100s, which no earlier entry or lower layer holds: the Windows importer fails (failed to find link target)", target)
	}
	return kind(typ == tar.TypeDir, typ == tar.TypeSymlink)
}

// winBelow is the kind (a tar typeflag) of what the lower layers held at
// rest, a path under Files/, when the layer being applied started.
func (b *baseFS) winBelow(rest string) (byte, bool) {
	k := layer.NTFSKey(rest)
	if typ, ok := b.win.below[k]; ok {
		return typ, true
	}
	q, ok := b.win.spell[k]
	if !ok || b.added[q] {
		return 0, false
	}
	return b.nodes[q].kind(), true
}
