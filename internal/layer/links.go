package layer

import (
	"fmt"
	"path"
	"strconv"
	"strings"

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
	ix := linkIndex{entries: map[string]tree.Entry{}, base: base}
	for _, t := range trees {
		for _, e := range t.Entries() {
			ix.entries[NTFSKey(e.Path)] = e
		}
	}
	return ix.isDir
}

// linkIndex holds an image's entries by ntfsKey, and what is below
// them (base, when not nil).
type linkIndex struct {
	entries map[string]tree.Entry
	base    func(p string) (isDir, known bool)
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
		e, ok := ix.entries[NTFSKey(cur)]
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
		case e.Kind == tree.Symlink:
			if hops >= maxLinkHops {
				return 0, false
			}
			to, ok := linkDest(cur, e.Link)
			if !ok {
				return 0, false
			}
			return ix.resolve(path.Join(append([]string{to}, comps[i+1:]...)...), hops+1)
		case e.Kind == tree.File && i < len(comps)-1:
			return 0, false // a file is no directory to go through
		case i == len(comps)-1:
			return e.Kind, true
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
	if opt.LinkTarget != nil {
		return opt.LinkTarget
	}
	ix := linkIndex{entries: map[string]tree.Entry{}}
	for _, e := range entries {
		ix.entries[NTFSKey(e.Path)] = e
	}
	return ix.isDir
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
	entries := t.Entries()
	lt := newLinkTyper(entries, opt)
	var out []UntypedLink
	for _, e := range entries {
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
	type first struct {
		e     tree.Entry
		layer int
	}
	seen := map[string]first{}
	for i, t := range trees {
		for _, e := range t.Entries() {
			k := collisionKey(e.Path)
			f, ok := seen[k]
			if !ok {
				seen[k] = first{e, i}
				continue
			}
			if f.e.Path == e.Path || (f.e.Kind == tree.Dir && e.Kind == tree.Dir) {
				continue
			}
			return &CaseCollision{First: f.e.Path, Later: e.Path, FirstLayer: f.layer, Layer: i, firstKind: f.e.Kind, kind: e.Kind}
		}
	}
	return nil
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
