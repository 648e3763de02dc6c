package layer

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pallet-dev/pallet/internal/tree"
)

// maxLinkHops is how many links a path may pass through while it is
// resolved. Windows gives up after 63 reparse points; a longer chain, or a
// loop, leaves the target unknown.
const maxLinkHops = 63

// ImageLinks returns a lookup for Options.LinkTarget over the trees of one
// platform image, lowest layer first: a later tree's entry at a path wins,
// as a later layer's does in the image. It answers whether an image path
// is a directory, following links on the way (in any component, through
// chains), and comparing names as NTFS does. A path the trees do not hold
// is asked of base, once the trees' links on the way are followed
// (whether it holds a directory there, and whether it knows); with base
// nil, such a path (in the base, or nowhere) is not known.
func ImageLinks(base func(p string) (isDir, known bool), trees ...*tree.Tree) func(p string) (isDir, known bool) {
	seqs := make([]iter.Seq[tree.Entry], len(trees))
	for i, t := range trees {
		seqs[i] = t.All()
	}
	ix := newLinkIndex(seqs...)
	ix.base = base
	return ix.isDir
}

// linkIndex holds an image's entries sorted by their NTFS names (see
// ntfsCompare), and what is below them (base, when not nil). It is held
// for as long as an image's Windows layers are written, and a node of
// node_modules is many entries: a map of NTFSKey to a copy of each
// entry, made from a copy of each tree's entries, was over 300 bytes an
// entry where a node is 24, and the path and target it names are the
// tree's own strings.
type linkIndex struct {
	nodes []linkNode
	// links are the symlinks' targets, by linkNode.link.
	links []string
	// entries, when not nil, holds the entries by NTFSKey instead, for
	// a caller that adds them one by one as it reads them and resolves
	// links between (VerifyWindows, as it reads a layer back).
	entries map[string]tree.Entry
	base    func(p string) (isDir, known bool)
}

// linkNode is one path of a linkIndex.
type linkNode struct {
	path string
	// link is the index of a symlink's target in linkIndex.links.
	link int32
	// layer is the tree the entry is in, for which of two entries of one
	// NTFS name wins.
	layer uint16
	kind  tree.Kind
}

// newLinkIndex indexes the entries of layers, lowest first: of two
// entries NTFS takes for one, the later wins (the later layer's, or
// within one layer the later in the tree's order), as the map by
// NTFSKey this replaced kept them.
func newLinkIndex(layers ...iter.Seq[tree.Entry]) linkIndex {
	// Counted first, so that the index is made at its size: grown by
	// appending, a slice is allocated some five times over.
	n, links := 0, 0
	for _, l := range layers {
		for e := range l {
			n++
			if e.Kind == tree.Symlink {
				links++
			}
		}
	}
	ix := linkIndex{nodes: make([]linkNode, 0, n), links: make([]string, 0, links)}
	for i, l := range layers {
		for e := range l {
			nd := linkNode{path: e.Path, link: -1, layer: uint16(min(i, math.MaxUint16)), kind: e.Kind}
			if e.Kind == tree.Symlink {
				nd.link = int32(len(ix.links))
				ix.links = append(ix.links, e.Link)
			}
			ix.nodes = append(ix.nodes, nd)
		}
	}
	slices.SortFunc(ix.nodes, func(a, b linkNode) int {
		if c := ntfsCompare(a.path, b.path); c != 0 {
			return c
		}
		if a.layer != b.layer {
			return cmp.Compare(a.layer, b.layer)
		}
		return strings.Compare(a.path, b.path)
	})
	// The last of each name is the one that wins.
	out := ix.nodes[:0]
	for i, nd := range ix.nodes {
		if i+1 < len(ix.nodes) && ntfsCompare(nd.path, ix.nodes[i+1].path) == 0 {
			continue
		}
		out = append(out, nd)
	}
	ix.nodes = slices.Clip(out)
	return ix
}

// lookup is the entry NTFS finds at p: its kind, and a symlink's target.
func (ix linkIndex) lookup(p string) (kind tree.Kind, link string, ok bool) {
	if ix.entries != nil {
		e, ok := ix.entries[NTFSKey(p)]
		return e.Kind, e.Link, ok
	}
	i, found := slices.BinarySearchFunc(ix.nodes, p, func(nd linkNode, p string) int { return ntfsCompare(nd.path, p) })
	if !found {
		return 0, "", false
	}
	nd := ix.nodes[i]
	if nd.link >= 0 {
		link = ix.links[nd.link]
	}
	return nd.kind, link, true
}

// isDir says whether p is a directory once every link on the way is
// followed, and whether that is known.
func (ix linkIndex) isDir(p string) (isDir, known bool) {
	k, ok := ix.resolve(p, 0)
	return ok && k == tree.Dir, ok
}

// resolve returns the kind of what p names once every link on the way is
// followed.
func (ix linkIndex) resolve(p string, hops int) (tree.Kind, bool) {
	p = path.Clean(p)
	if p == "." {
		return tree.Dir, true
	}
	comps := strings.Split(p, "/")
	for i := range comps {
		cur := strings.Join(comps[:i+1], "/")
		kind, link, ok := ix.lookup(cur)
		if !ok {
			if ix.base == nil {
				return 0, false
			}
			isDir, known := ix.base(p)
			if !known {
				return 0, false
			}
			if isDir {
				return tree.Dir, true
			}
			return tree.File, true
		}
		switch {
		case kind == tree.Symlink:
			if hops >= maxLinkHops {
				return 0, false
			}
			to, ok := linkDest(cur, link)
			if !ok {
				return 0, false
			}
			return ix.resolve(path.Join(append([]string{to}, comps[i+1:]...)...), hops+1)
		case kind == tree.File && i < len(comps)-1:
			return 0, false // a file is no directory to go through
		case i == len(comps)-1:
			return kind, true
		}
	}
	return 0, false
}

// linkDest is the image path a link at p with target points at, read as
// Windows reads it ('\' separates too), if it stays in the image.
func linkDest(p, target string) (string, bool) {
	t := strings.ReplaceAll(target, `\`, "/")
	if t == "" || strings.HasPrefix(t, "/") || strings.IndexByte(t, ':') >= 0 {
		return "", false
	}
	to := path.Join(path.Dir(p), t)
	if to == ".." || strings.HasPrefix(to, "../") {
		return "", false
	}
	return to, true
}

// linkTyper decides whether each symlink of a Windows layer is a
// directory link: from the image when it can tell, else from the entry's
// LinkAs, else a file link.
type linkTyper func(p string) (isDir, known bool)

func newLinkTyper(entries []tree.Entry, opt Options) linkTyper {
	return linkTyperOf(slices.Values(entries), opt)
}

// linkTyperOf is newLinkTyper for entries walked, not held: a tree's
// All, which a copy of its entries need not be made for.
func linkTyperOf(entries iter.Seq[tree.Entry], opt Options) linkTyper {
	if opt.LinkTarget != nil {
		return opt.LinkTarget
	}
	return newLinkIndex(entries).isDir
}

// dirLink reports whether the link e (its target already checked by
// windowsLinkTarget) is to be a directory link, and whether that was
// decided rather than assumed.
func (lt linkTyper) dirLink(e tree.Entry) (isDir, decided bool) {
	to, ok := linkDest(e.Path, e.Link)
	if ok {
		if isDir, known := lt(to); known {
			return isDir, true
		}
	}
	switch e.LinkAs {
	case tree.LinkDir:
		return true, true
	case tree.LinkFile:
		return false, true
	}
	return false, false
}

// UntypedLink is a symlink, at Path in the layer's tree, that a Windows
// layer types as a file link for want of knowing its target, Link.
type UntypedLink struct{ Path, Link string }

// String says what the link becomes, and what to do.
func (u UntypedLink) String() string {
	return fmt.Sprintf("symlink /%s -> %s: its target is not in the image's layers (in the base, or missing), so Windows gets a file link; if it is a directory, say link: dir on the placement", u.Path, u.Link)
}

// UntypedLinks lists the symlinks of t that a Windows layer written with
// opt would type as file links for want of knowing their target: not in
// the image as opt.LinkTarget sees it (or in t alone), and no LinkAs given.
// Each is worth a warning, at the placement that put it there: if the
// target is a directory (in the base, say), the link will not open on
// Windows. Other formats (a base layer has no Windows records) have none.
func UntypedLinks(t *tree.Tree, opt Options) []UntypedLink {
	if opt.Format != Windows {
		return nil
	}
	lt := linkTyperOf(t.All(), opt)
	var out []UntypedLink
	for e := range t.All() {
		if e.Kind != tree.Symlink {
			continue
		}
		if _, decided := lt.dirLink(e); !decided {
			out = append(out, UntypedLink{Path: e.Path, Link: e.Link})
		}
	}
	return out
}

// CheckWindowsImage refuses, across the layer trees of one Windows image
// (lowest first), two paths that NTFS takes for one but that are spelled
// apart ("bin/Agent.exe" and "bin/agent.exe"), unless both are
// directories, which merge. Within a layer the writer refuses them; across
// layers the later one would hide the earlier one on Windows and not on
// Linux tooling, which is the silent overwrite a recipe must not make.
// Paths spelled alike are left to the caller's own same-path rule.
func CheckWindowsImage(trees ...*tree.Tree) error {
	// The image's entries sorted by collisionKey, each with its place
	// in the order they come in (seq), not a map by collisionKey of
	// each entry: that was a key made of every path and a copy of every
	// entry, held until the last layer's.
	type named struct {
		path string
		seq  uint32
		kind tree.Kind
	}
	n := 0
	ends := make([]int, len(trees)) // seq past each tree's last
	for i, t := range trees {
		for range t.All() {
			n++
		}
		ends[i] = n
	}
	all := make([]named, 0, n)
	for _, t := range trees {
		for e := range t.All() {
			all = append(all, named{e.Path, uint32(len(all)), e.Kind})
		}
	}
	slices.SortFunc(all, func(a, b named) int {
		if c := compareMapped(a.path, b.path, foldRune); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	// Of the entries that meet the first of their name, the first to
	// come: the one a walk in order, layer by layer, would meet first.
	var first, later *named
	for i := 0; i < len(all); {
		f := &all[i]
		j := i + 1
		for ; j < len(all) && compareMapped(f.path, all[j].path, foldRune) == 0; j++ {
			e := &all[j]
			if f.path == e.path || f.kind == tree.Dir && e.kind == tree.Dir {
				continue
			}
			if later == nil || e.seq < later.seq {
				first, later = f, e
			}
			break // the rest of the name come after it
		}
		for ; j < len(all) && compareMapped(f.path, all[j].path, foldRune) == 0; j++ {
		}
		i = j
	}
	if later == nil {
		return nil
	}
	layer := func(seq uint32) int {
		i, _ := slices.BinarySearch(ends, int(seq)+1)
		return i
	}
	return &CaseCollision{First: first.path, Later: later.path, FirstLayer: layer(first.seq), Layer: layer(later.seq), firstKind: first.kind, kind: later.kind}
}

// CaseCollision is two layers' paths that are one on Windows; layers count
// from 0 in the order given to CheckWindowsImage. LayerNames, when the
// caller sets it, names them by index in the error, as its other errors
// name layers; else they are numbered from 1.
type CaseCollision struct {
	First, Later      string
	FirstLayer, Layer int
	LayerNames        []string
	firstKind, kind   tree.Kind
}

func (c *CaseCollision) Error() string {
	return fmt.Sprintf("%s (a %s, layer %s) and %s (a %s, layer %s) are one path on Windows, which compares names without case: the later would hide the earlier; place it once, spelled one way", ShowPath("/"+c.First), c.firstKind, c.layerName(c.FirstLayer), ShowPath("/"+c.Later), c.kind, c.layerName(c.Layer))
}

func (c *CaseCollision) layerName(i int) string {
	if i < len(c.LayerNames) {
		return c.LayerNames[i]
	}
	return strconv.Itoa(i + 1)
}

// ntfsCompare orders a and b as their NTFSKeys compare, without making
// them.
func ntfsCompare(a, b string) int { return compareMapped(a, b, ntfsUpper) }

// compareMapped orders a and b as strings.Map(upper, a) and
// strings.Map(upper, b) compare, without making them: both are mapped a
// character at a time, an invalid byte as U+FFFD, as strings.Map maps
// it; UTF-8's byte order is its characters'. upper maps ASCII to its
// upper case, as ntfsUpper and foldRune do.
func compareMapped(a, b string, upper func(rune) rune) int {
	for len(a) > 0 && len(b) > 0 {
		x, y := a[0], b[0]
		if x < utf8.RuneSelf && y < utf8.RuneSelf {
			// ASCII, the common case, without a call.
			if 'a' <= x && x <= 'z' {
				x -= 'a' - 'A'
			}
			if 'a' <= y && y <= 'z' {
				y -= 'a' - 'A'
			}
			if x != y {
				return cmp.Compare(x, y)
			}
			a, b = a[1:], b[1:]
			continue
		}
		r, n := utf8.DecodeRuneInString(a)
		s, m := utf8.DecodeRuneInString(b)
		if c := cmp.Compare(upper(r), upper(s)); c != 0 {
			return c
		}
		a, b = a[n:], b[m:]
	}
	return cmp.Compare(len(a), len(b))
}
