package dockerfile

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// srcKind is where the content of a COPY or ADD comes from.
type srcKind int

const (
	srcFile    srcKind = iota // a context file, placed as it is
	srcDir                    // a context directory, maybe filtered
	srcArchive                // a context tar archive, unpacked (ADD)
	srcURL                    // a pinned download (ADD)
	srcEmpty                  // the directory WORKDIR makes
)

// source is one artifact's content, described well enough to make its
// artifact and, for a context directory, any part of it: a COPY --from a
// stage takes a subdirectory of what the stage copied.
type source struct {
	kind srcKind
	// path is the host path of a context file, directory or archive.
	path string
	// hint is the name the artifact is given when it is free: the path
	// in the context, or the download's file name.
	hint string
	// filter is a directory's; filtered says it left something out.
	filter   *filter
	filtered bool
	url      string
	sha256   string
	filename string
	unpack   bool
	// members, when set, are the host paths of the files of a
	// directory a pattern matched, placed as one (groupFiles), in order.
	members []string
}

// id tells sources apart: two COPYs of the same path share an artifact.
func (s *source) id() string {
	switch s.kind {
	case srcDir:
		if s.filtered {
			return "dir:" + s.path + " " + s.filter.id()
		}
		return "dir:" + s.path
	case srcFile:
		return "file:" + s.path
	case srcArchive:
		return "archive:" + s.path
	case srcURL:
		return fmt.Sprintf("url:%s sha256:%s unpack:%v", s.url, s.sha256, s.unpack)
	}
	return "workdir"
}

// kind is the artifact kind that makes the source, for an image of
// platform p.
func (s *source) artifactKind(p platform.Platform) artifact.Kind {
	// ADD keeps an archive's absolute links and its headers' modes and
	// owners, as BuildKit unpacks them: a root file system's
	// /etc/localtime, sticky /tmp and setuid passwd. A Windows layer
	// holds neither (its links are relative, its files carry no mode),
	// so there the archive's absolute links are refused as they unpack.
	unpack := &artifact.Extract{RootedLinks: !p.IsWindows(), Headers: !p.IsWindows()}
	switch s.kind {
	case srcDir:
		if s.filtered {
			return &localDir{Path: s.path, filter: s.filter}
		}
		// COPY takes the links inside a directory as they are, as
		// BuildKit does (a root file system's /bin/sh -> busybox, or
		// node_modules/.bin): as the filtered directory above does.
		return &artifact.Local{Path: s.path, KeepLinks: true}
	case srcFile:
		return &artifact.Local{Path: s.path}
	case srcArchive:
		return &artifact.Local{Path: s.path, Extract: unpack}
	case srcURL:
		u := &artifact.URL{URL: s.url, SHA256: s.sha256, Filename: s.filename}
		if s.unpack {
			u.Extract = unpack
		}
		return u
	}
	return emptyDir{}
}

// opaque says the source's files are known only once it is fetched.
func (s *source) opaque() bool {
	return s.kind == srcArchive || (s.kind == srcURL && s.unpack)
}

// isDir says the source is placed as a directory's content.
func (s *source) isDir() bool { return s.kind != srcFile && !(s.kind == srcURL && !s.unpack) }

// placed is what one placement put in a stage, as far as the plan knows
// it: where its tree landed, and its paths unless it is an archive.
type placed struct {
	src   *source
	pm    plan.Placement
	root  string
	files map[string]tree.Kind
}

// content is the file system of a stage as its COPY and ADD instructions
// made it: every placement, and for each path the last one that wrote it.
type content struct {
	placed []*placed
	nodes  map[string]node
	// fold, on a Windows stage, is how Windows compares names
	// (layer.NTFSKey): C:\k and C:\K are one directory there. spelled
	// maps the folded form of every path the stage holds to the one
	// spelling it was first given, under which nodes keeps it.
	fold    func(string) string
	spelled map[string]string
	// baseDirs are the directories of the stage's base, where pallet
	// knows them at plan time (its built-in Windows base).
	baseDirs map[string]bool
}

type node struct {
	kind   tree.Kind
	by     int
	opaque bool
	// maybeDir marks a file that goes into a directory of the base, if
	// the base holds one there (plan.Placement.IntoDirAs).
	maybeDir bool
}

func newContent() *content {
	return &content{nodes: map[string]node{"/": {kind: tree.Dir, by: -1}}}
}

// foldNames makes c compare names as Windows does: fold is
// layer.NTFSKey.
func (c *content) foldNames(fold func(string) string) {
	c.fold = fold
	c.spelled = map[string]string{}
	for p := range c.nodes {
		c.spelled[fold(p)] = p
	}
}

// holdBase records the directories of base, the tree of a base pallet
// knows at plan time: a file copied to one of them without a trailing
// separator goes into it, as Docker copies it.
func (c *content) holdBase(base *tree.Tree) {
	if c.baseDirs == nil {
		c.baseDirs = map[string]bool{}
	}
	// The entries list the directories the files are in too.
	for e := range base.All() {
		if e.Kind == tree.Dir {
			c.baseDirs["/"+e.Path] = true
			c.remember("/" + e.Path)
		}
	}
}

// remember keeps p's spelling, unless the stage holds it spelled
// otherwise already.
func (c *content) remember(p string) {
	if c.fold == nil {
		return
	}
	if _, ok := c.spelled[c.fold(p)]; !ok {
		c.spelled[c.fold(p)] = p
	}
}

// spell returns p (clean, absolute) spelled as the stage holds it: on a
// Windows stage, the longest part of it that the stage holds under
// another case takes that spelling (C:\K\x is /k/x once /k is there),
// so that every lookup and placement names what Windows would find.
func (c *content) spell(p string) string {
	if c.fold == nil {
		return p
	}
	for d := p; d != "/" && d != "."; d = path.Dir(d) {
		if s, ok := c.spelled[c.fold(d)]; ok {
			return s + p[len(d):]
		}
	}
	return p
}

func (c *content) clone() *content {
	return &content{placed: slices.Clone(c.placed), nodes: maps.Clone(c.nodes), fold: c.fold, spelled: maps.Clone(c.spelled), baseDirs: c.baseDirs}
}

// add records a placement; p.files holds paths relative to p.root ("" is
// the root itself).
func (c *content) add(p *placed) {
	i := len(c.placed)
	c.placed = append(c.placed, p)
	for dir := path.Dir(p.root); ; dir = path.Dir(dir) {
		if _, ok := c.nodes[dir]; !ok {
			c.nodes[dir] = node{kind: tree.Dir, by: -1}
			c.remember(dir)
		}
		if dir == "/" {
			break
		}
	}
	if p.src.opaque() {
		c.nodes[p.root] = node{kind: tree.Dir, by: i, opaque: true}
		c.remember(p.root)
		return
	}
	for _, rel := range slices.Sorted(maps.Keys(p.files)) {
		c.nodes[path.Join(p.root, rel)] = node{kind: p.files[rel], by: i, maybeDir: p.pm.IntoDirAs != ""}
		c.remember(path.Join(p.root, rel))
	}
}

// maybeDirAt returns the placement of a file at or above p, or under it,
// that goes into a directory of the stage's base if it holds one: where
// such a file is, the plan cannot know.
func (c *content) maybeDirAt(p string) (*placed, bool) {
	for dir := p; ; dir = path.Dir(dir) {
		if n, ok := c.nodes[dir]; ok && n.maybeDir {
			return c.placed[n.by], true
		}
		if dir == "/" {
			break
		}
	}
	for i, q := range c.placed {
		if q.pm.IntoDirAs != "" && under(q.root, p) && c.nodes[q.root].by == i {
			return q, true
		}
	}
	return nil, false
}

// fileInTheWay returns a path placement p needs as a directory (where its
// tree lands, a directory inside it, or a parent of either) at which the
// stage holds a file one of its COPYs put there, and that placement.
// Docker does not replace a file with a directory: its copy fails with
// "not a directory". Replacing a file with a file is what a later COPY
// may do.
func (c *content) fileInTheWay(p *placed) (string, *placed, bool) {
	if at, q, ok := c.fileAbove(p.root); ok {
		return at, q, true
	}
	if p.src.opaque() {
		return c.fileAt(p.root)
	}
	for _, rel := range slices.Sorted(maps.Keys(p.files)) {
		if p.files[rel] != tree.Dir {
			continue
		}
		if at, q, ok := c.fileAt(path.Join(p.root, rel)); ok {
			return at, q, true
		}
	}
	return "", nil, false
}

// from names where q's content at p came from: its source, or the path
// in it of a directory's file.
func (q *placed) from(p string) string {
	if q.src.kind == srcDir {
		return path.Join(q.src.hint, relTo(p, q.root))
	}
	return q.src.hint
}

// fileAbove is fileAt for the directories above p.
func (c *content) fileAbove(p string) (string, *placed, bool) {
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if at, q, ok := c.fileAt(dir); ok {
			return at, q, true
		}
	}
	return "", nil, false
}

// fileAt says p is a file a COPY of the stage put there. A file that may
// have gone into a directory of the base (maybeDir) is not known to be
// one.
func (c *content) fileAt(p string) (string, *placed, bool) {
	n, ok := c.nodes[p]
	if !ok || n.kind != tree.File || n.maybeDir || n.by < 0 {
		return "", nil, false
	}
	return p, c.placed[n.by], true
}

// isDir says p is a directory in the stage as far as the plan knows: one
// its COPYs made, or one of a base it knows (baseDirs) that no COPY
// replaced.
func (c *content) isDir(p string) bool {
	n, ok := c.nodes[p]
	if ok {
		return n.kind == tree.Dir
	}
	return c.baseDirs[p]
}

// opaqueAbove returns the placement of an archive unpacked above p, if
// any: p may be there, but the plan cannot know.
func (c *content) opaqueAbove(p string) (*placed, bool) {
	for dir := p; dir != "/"; dir = path.Dir(dir) {
		if n, ok := c.nodes[dir]; ok && n.opaque {
			return c.placed[n.by], true
		}
	}
	return nil, false
}

// under says p is root or inside it.
func under(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// names gives each distinct source one artifact name, valid as a recipe's
// (so that the same image can be written both ways, names included).
type names struct {
	byID map[string]string
	used map[string]bool
}

var notName = lazyre.New(`[^a-z0-9._-]+`)

// name returns the source's artifact name: its hint made a valid name,
// with a number added when another source has it already.
func (n *names) name(s *source) string {
	id := s.id()
	if name, ok := n.byID[id]; ok {
		return name
	}
	base := strings.Trim(notName().ReplaceAllString(strings.ToLower(s.hint), "-"), "-._")
	if base == "" {
		base = "context"
	}
	if s.members != nil {
		// A name no hint makes, so that a group takes none of the
		// names its files, or later sources, are given.
		base += "+"
	}
	name := base
	for i := 2; n.used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	n.byID[id] = name
	n.used[name] = true
	return name
}

// sub is the part of a context directory source under rel.
func (s *source) sub(rel string) *source {
	if rel == "" || rel == "." {
		return s
	}
	t := *s
	t.path = filepath.Join(s.path, filepath.FromSlash(rel))
	t.hint = path.Join(s.hint, rel)
	return &t
}
