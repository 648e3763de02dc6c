package image

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/tree"
)

// maxBaseEntries bounds the paths BaseView keeps from a base: a
// distribution's base holds some thousands.
const maxBaseEntries = 1 << 20

// The work of resolving a base's links (tree.Budget, in bytes looked up)
// is bounded by what a legitimate base needs: linkWorkBase, and
// linkWorkPerEntry more for each tar entry, where resolving a link of a
// distribution's base costs a few hundred (each prefix of its path, and
// each of its target joined to its directory). Links made to loop
// through 4 KiB targets cost megabytes each: 20,000 took 14 s to
// resolve, and a million would have taken minutes; a base past the
// budget is refused.
const (
	linkWorkBase     = 1 << 24
	linkWorkPerEntry = 1 << 10
)

// ViewKey names what BaseView reads from img: its layers' media types
// and diffIDs, in order. Two images with the same key hold the same files.
func ViewKey(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	layers, err := img.Layers()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	io.WriteString(h, "pallet base view v1\n")
	for i, d := range cf.RootFS.DiffIDs {
		mt := ""
		if i < len(layers) {
			m, _ := layers[i].MediaType()
			mt = string(m)
		}
		io.WriteString(h, mt+" "+d.String()+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BaseView reads img's layers in order, as an importer applies them
// (whiteouts included), and returns what placing into the result depends
// on (see tree.View): its directories, its symlinks that lead to a
// directory or to nothing yet (an importer, like Docker's COPY, creates
// what a placement through such a link needs), those that lead to a
// file (tree.View.FileLinks), and its other paths,
// files that no directory may replace. Only tar headers matter,
// but every layer is read whole, to at most maxBytes uncompressed, and a
// zstd layer's window held to maxWindow, as an archive's are: its
// uncompressed bytes are checked against the config's diffID, so what the
// view is derived from is what the image names. A layer whose media type
// is not one of a layer an importer unpacks is refused: the image made
// on it would fail where it is pulled.
func BaseView(img v1.Image, maxBytes, maxWindow int64) (*tree.View, error) {
	return baseView(img, maxBytes, maxWindow, false)
}

// baseView is BaseView, or WindowsBaseView when windows is set: the tar
// names mapped to the paths under C:\ they stand for (winEntry), and
// the links kept as written.
func baseView(img v1.Image, maxBytes, maxWindow int64, windows bool) (*tree.View, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != len(cf.RootFS.DiffIDs) {
		return nil, fmt.Errorf("its manifest lists %d layers and its config %d diffIDs (rootfs.diff_ids): an importer checks each layer against its own", len(layers), len(cf.RootFS.DiffIDs))
	}
	b := newBaseFS()
	if windows {
		b.win = &winState{spell: map[string]string{}, last: -1, dirs: map[string]*tree.WinDir{}, interned: map[tree.WinDir]*tree.WinDir{}}
	}
	for i, l := range layers {
		// A foreign layer is never downloaded (a Windows base's): what
		// it holds is not known.
		mt, err := l.MediaType()
		if err == nil && !mt.IsDistributable() {
			b.foreign++
			continue
		}
		if err == nil && !layerTypes[mt] {
			err = fmt.Errorf("media type %q is not a layer's (%s); an importer would not unpack it", mt, knownLayerTypes)
		}
		if err == nil {
			b.layer = i
			err = b.apply(l, cf.RootFS.DiffIDs[i], maxBytes, maxWindow)
		}
		if err != nil {
			d, _ := l.Digest()
			return nil, fmt.Errorf("base layer %d (%s): %w", i+1, d, err)
		}
	}
	v := &tree.View{Links: tree.Links{}, Dirs: map[string]tree.DirMeta{}, Files: map[string]bool{}, FileLinks: tree.Links{}}
	for p, n := range b.nodes {
		if p == "." {
			continue
		}
		switch {
		case n.dir:
			v.Dirs[p] = n.meta
		case n.link == "":
			v.Files[p] = true
		case n.link != "" && windows:
			// A Windows base's link is kept as written, whatever it
			// leads to: Windows reads its target ('\' separators,
			// C:\ and \ roots, names without case), which the
			// caller resolves as Windows does.
			v.Links[p] = n.link
		case n.link != "":
			// A link that loops is no directory to place anything
			// into: left out, a placement under it replaces it with a
			// directory, as an importer would. One that leads to a
			// file is kept apart: a Dockerfile COPY to it writes the
			// file it leads to.
			r, err := b.links.ResolveWithin(p, &b.work)
			if errors.Is(err, tree.ErrLinkWork) {
				d, _ := layers[n.layer].Digest()
				return nil, fmt.Errorf("base layer %d (%s): %w: more than %d bytes looked up, for %d entries (a base made to loop its links through long targets?)", n.layer+1, d, err, b.budget, b.entries)
			}
			if err != nil {
				continue
			}
			if b.leadsToDir(r) {
				v.Links[p] = n.link
			} else if t, ok := b.nodes[r]; ok && !t.dir && t.link == "" {
				v.FileLinks[p] = n.link
			}
		}
	}
	if windows {
		b.win.viewDirs(v)
	}
	return v, nil
}

// baseFS is what BaseView keeps of a base's file system: a node per path,
// with its children, so that a whiteout or a replaced directory removes
// its subtree without looking at the rest, and its links.
type baseFS struct {
	nodes map[string]*node
	links tree.Links
	// visits counts the nodes remove looked at: the work whiteouts and
	// replacements cost, which the tests bound.
	visits int
	// added are the paths the layer being applied put there: its
	// whiteouts hide what the layers below hold, not these.
	added map[string]bool
	// win, for a Windows base, is what applying its layers as the
	// Windows importer does needs besides (winEntry).
	win *winState
	// work is what resolving links may still cost; budget is what it
	// was given in all, for entries entries. layer is the index of the
	// layer being applied; foreign counts the foreign layers below it,
	// whose files are not known.
	work            tree.Budget
	budget, entries int64
	layer, foreign  int
}

type node struct {
	dir bool
	// layer is the index of the layer that made a link.
	layer    int32
	meta     tree.DirMeta
	link     string // a symlink's target; "" for anything else
	children map[string]bool
}

// kind is n's tar typeflag: a directory, a symlink or a file.
func (n *node) kind() byte {
	switch {
	case n.dir:
		return tar.TypeDir
	case n.link != "":
		return tar.TypeSymlink
	}
	return tar.TypeReg
}

func newBaseFS() *baseFS {
	return &baseFS{nodes: map[string]*node{".": {dir: true, meta: tree.DirMeta{Mode: 0o755}}}, links: tree.Links{},
		work: tree.Budget{Left: linkWorkBase}, budget: linkWorkBase}
}

// layerTypes are the media types of the distributable layers containerd
// and Docker unpack (containerd's images.DiffCompression knows no others).
var layerTypes = map[types.MediaType]bool{
	types.OCILayer:                true,
	types.OCILayerZStd:            true,
	types.OCIUncompressedLayer:    true,
	types.DockerLayer:             true,
	types.DockerUncompressedLayer: true,
}

const knownLayerTypes = "OCI or Docker tar, tar+gzip or tar+zstd"

// uncompressed is l's tar, decompressed as its first bytes say, as
// go-containerregistry and containerd decompress it whatever its media
// type claims, but with a zstd frame's window held to maxWindow as an
// archive's is (go-containerregistry's decoder allows 512 MiB).
func uncompressed(l v1.Layer, maxWindow int64) (io.ReadCloser, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(rc)
	head, _ := br.Peek(archive.SniffLen)
	// Layers come gzipped, zstd-compressed or plain.
	f, _ := archive.Sniff(head)
	if f != archive.TarGzip && f != archive.TarZstd {
		f = archive.Tar
	}
	// The caller bounds the bytes; the limit here would be the default.
	dr, err := archive.Decompress(context.Background(), br, f, archive.Options{Name: "layer", MaxBytes: math.MaxInt64, MaxWindow: maxWindow})
	if err != nil {
		rc.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{dr, closers{dr, rc}}, nil
}

// closers closes each in turn, and reports the first error.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (b *baseFS) apply(l v1.Layer, diffID v1.Hash, maxBytes, maxWindow int64) error {
	rc, err := uncompressed(l, maxWindow)
	if err != nil {
		return err
	}
	defer rc.Close()
	b.added = map[string]bool{}
	if b.win != nil {
		b.win.layer(b.layer)
	}
	h := sha256.New()
	lr := &io.LimitedReader{R: rc, N: maxBytes + 1}
	tr := tar.NewReader(io.TeeReader(lr, h))
	over := func() error {
		return fmt.Errorf("more than %d bytes uncompressed (the extract limit)", maxBytes)
	}
	var entries int
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if lr.N <= 0 {
			return over()
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader) {
			// Bare, the tar reader's error ("unexpected EOF") said
			// nothing of what was read: a layer whose bytes, as
			// decompressed, are no tar.
			return fmt.Errorf("not a tar, or one cut short: after %d entries, %w", entries, err)
		}
		if err != nil {
			return err
		}
		entries++
		if b.win != nil {
			if err := b.winEntry(hdr); err != nil {
				return fmt.Errorf("entry %.100q: %w", hdr.Name, err)
			}
			if len(b.nodes) > maxBaseEntries || len(b.win.created)+len(b.win.whited) > maxBaseEntries {
				return fmt.Errorf("more than %d paths", maxBaseEntries)
			}
			continue
		}
		if err := checkEntry(hdr, false); err != nil {
			return err
		}
		b.entries++
		b.work.Left += linkWorkPerEntry
		b.budget += linkWorkPerEntry
		if err := b.entry(hdr); errors.Is(err, tree.ErrLinkWork) {
			return fmt.Errorf("entry %.100q: %w: more than %d bytes looked up, for %d entries (a base made to loop its links through long targets?)", hdr.Name, err, b.budget, b.entries)
		} else if err != nil {
			return fmt.Errorf("entry %.100q: %w", hdr.Name, err)
		}
		if len(b.nodes) > maxBaseEntries {
			return fmt.Errorf("more than %d paths", maxBaseEntries)
		}
	}
	// The end of the archive is not the end of the stream: the rest
	// (padding) is part of what the diffID covers.
	if _, err := io.Copy(h, lr); err != nil {
		return err
	}
	if lr.N <= 0 {
		return over()
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); diffID.String() != got {
		return fmt.Errorf("uncompressed, its content is %s, not the diffID %s the config gives", got, diffID)
	}
	return nil
}

// resolveDir is dir with the links along it followed; it fails only
// when that is past the work allowed (tree.ErrLinkWork).
func (b *baseFS) resolveDir(dir string) (string, error) {
	for d := dir; d != "."; d = path.Dir(d) {
		if _, ok := b.links[d]; ok {
			r, err := b.links.ResolveWithin(dir, &b.work)
			if errors.Is(err, tree.ErrLinkWork) {
				return "", err
			}
			if err == nil {
				return r, nil
			}
			return dir, nil
		}
	}
	return dir, nil
}

// checkEntry refuses a name or a link target past the bounds archive
// extraction keeps: 256 directories deep and 4096 bytes, and link
// targets of 4096 bytes (Linux's PATH_MAX), or on Windows 16 KiB (what a
// reparse point holds). The view holds each parent of a name, and
// resolves each link of a Linux base component by component; the tar
// reader takes names and targets up to 1 MiB: one entry 20,000
// directories deep, in a layer of a few hundred bytes, took 9 s and
// 1.2 GB to apply, one of 1 MiB would take terabytes.
func checkEntry(hdr *tar.Header, windows bool) error {
	if p := path.Clean("/" + hdr.Name); len(p) > tree.MaxPath+1 || strings.Count(p, "/") > tree.MaxDepth {
		return fmt.Errorf("entry %.60q... (%d bytes, %d deep) is longer than %d bytes or deeper than %d directories (the bounds of an archive's entries)", p, len(p)-1, strings.Count(p, "/"), tree.MaxPath, tree.MaxDepth)
	}
	limit, what := tree.MaxPath, "Linux's PATH_MAX"
	if windows {
		limit, what = maxWindowsLinkTarget, "what a Windows reparse point holds"
	}
	if len(hdr.Linkname) > limit {
		return fmt.Errorf("entry %.60q: a link target of %d bytes, over %d (%s)", hdr.Name, len(hdr.Linkname), limit, what)
	}
	return nil
}

// maxWindowsLinkTarget is the most a Windows reparse point holds.
const maxWindowsLinkTarget = 16 << 10

// entry applies one tar header of a Linux base (a Windows base's: winEntry).
func (b *baseFS) entry(hdr *tar.Header) error {
	p := path.Clean("/" + hdr.Name)[1:]
	if p == "" {
		return nil
	}
	// The importer writes through a parent that is a link, and creates
	// missing parents as directories.
	dir, name := path.Split(p)
	if dir = strings.TrimSuffix(dir, "/"); dir != "" {
		var err error
		if dir, err = b.resolveDir(dir); err != nil {
			return err
		}
		b.mkdirAll(dir)
		p = path.Join(dir, name)
	}
	switch {
	case name == ".wh..wh..opq":
		if n, ok := b.nodes[path.Dir(p)]; ok {
			for c := range n.children {
				if !b.added[c] {
					b.remove(c)
				}
			}
		}
		return nil
	case strings.HasPrefix(name, ".wh."):
		// containerd refuses a whiteout of no name, of "." or of ".."
		// ("invalid whiteout name"), where umoci removes what the
		// directory or its parent holds: the view would follow
		// neither.
		if hidden := name[len(".wh."):]; hidden == "" || hidden == "." || hidden == ".." {
			return fmt.Errorf("a whiteout of %q, which names no entry of its directory: containerd refuses the layer (invalid whiteout name)", hidden)
		}
		if target := path.Join(path.Dir(p), name[len(".wh."):]); !b.added[target] {
			b.remove(target)
		}
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if n, ok := b.nodes[p]; ok && n.dir {
			n.meta = dirMeta(hdr)
			b.added[p] = true
			return nil
		}
		b.remove(p)
		b.add(p, &node{dir: true, meta: dirMeta(hdr)})
	case tar.TypeSymlink:
		b.remove(p)
		b.add(p, &node{link: hdr.Linkname})
	case tar.TypeLink:
		if err := b.checkHardLink(hdr.Linkname); err != nil {
			return err
		}
		b.remove(p)
		b.add(p, &node{})
	default:
		b.remove(p)
		b.add(p, &node{})
	}
	return nil
}

// checkHardLink refuses a hard link that every importer fails to make:
// containerd, Docker and umoci call link(2) on the target, which must be
// there already, from an earlier entry or a lower layer, and must not be
// a directory. The target's parents are followed through the base's
// links within the root, as containerd follows them; a target climbing
// out is taken at the root, as containerd takes it (Docker refuses it).
// Carried into pallet's output, such a layer would fail where the image
// is pulled, not here.
func (b *baseFS) checkHardLink(linkname string) error {
	target := path.Clean("/" + linkname)[1:]
	if target == "" {
		return fmt.Errorf("a hard link to the root directory, which link(2) refuses: importers fail to unpack it")
	}
	dir, name := path.Split(target)
	if dir = strings.TrimSuffix(dir, "/"); dir != "" {
		var err error
		if dir, err = b.resolveDir(dir); err != nil {
			return err
		}
	}
	n, ok := b.nodes[path.Join(dir, name)]
	switch {
	case !ok:
		return fmt.Errorf("a hard link to %.100q, which no earlier entry or lower layer holds: importers (containerd, Docker, umoci) fail to unpack it", linkname)
	case n.dir:
		return fmt.Errorf("a hard link to the directory %.100q, which link(2) refuses: importers fail to unpack it", linkname)
	}
	return nil
}

// mkdirAll makes dir and its missing parents directories, as an importer
// does for an entry whose parents the layer does not list.
func (b *baseFS) mkdirAll(dir string) {
	var missing []string
	for d := dir; d != "."; d = path.Dir(d) {
		if n, ok := b.nodes[d]; ok && (n.dir || n.link != "") {
			break
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		b.remove(missing[i])
		b.add(missing[i], &node{dir: true, meta: tree.DirMeta{Mode: 0o755}})
	}
}

// add puts n at p, whose parent is there.
func (b *baseFS) add(p string, n *node) {
	b.nodes[p] = n
	if b.win != nil {
		b.win.spell[layer.NTFSKey(p)] = p
	}
	if b.added != nil {
		b.added[p] = true
	}
	if n.link != "" {
		b.links[p] = n.link
		n.layer = int32(b.layer)
	}
	parent := b.nodes[path.Dir(p)]
	if parent == nil {
		return
	}
	if parent.children == nil {
		parent.children = map[string]bool{}
	}
	parent.children[p] = true
}

// remove forgets p and what is under it.
func (b *baseFS) remove(p string) {
	if p == "." {
		return
	}
	if _, ok := b.nodes[p]; !ok {
		return
	}
	if parent := b.nodes[path.Dir(p)]; parent != nil {
		delete(parent.children, p)
	}
	todo := []string{p}
	for len(todo) > 0 {
		q := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		b.visits++
		n := b.nodes[q]
		if n == nil {
			continue
		}
		for c := range n.children {
			todo = append(todo, c)
		}
		delete(b.nodes, q)
		delete(b.links, q)
		if b.win != nil {
			k := layer.NTFSKey(q)
			delete(b.win.spell, k)
			if _, ok := b.win.below[k]; !ok && !b.added[q] {
				b.win.below[k] = n.kind()
			}
		}
	}
}

// dirMeta is a directory header's mode and owner, as a tree entry holds
// them.
func dirMeta(hdr *tar.Header) tree.DirMeta {
	return tree.DirMeta{Mode: tree.FromUnixMode(uint32(hdr.Mode & 0o7777)), UID: hdr.Uid, GID: hdr.Gid}
}

// leadsToDir says whether r, a resolved path, is a directory or could be
// made one: it is one, or it is not there and every parent of it that is
// there is a directory.
func (b *baseFS) leadsToDir(r string) bool {
	for p := r; ; p = path.Dir(p) {
		if n, ok := b.nodes[p]; ok {
			return n.dir
		}
		if p == "." {
			return true
		}
	}
}
