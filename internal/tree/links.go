package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
)

// maxLinkHops bounds the links followed in one path, as Linux does
// (ELOOP after 40).
const maxLinkHops = 40

// Links are symlinks an image holds, by clean path without the leading
// slash, each to its target as written.
type Links map[string]string

// Resolve returns p (clean, relative to the root) with every link along it
// followed, the last element too, without leaving the root, as
// continuity's RootPath resolves it for BuildKit's copy and containerd's
// unpacking: a link's target is joined to the link's directory, or to
// the root when absolute, and cleaned as a path, its ".." taken
// lexically, before what it names is looked up (a target "x/../y" is
// "y" beside the link, wherever a link x leads), and stopping at the
// root.
func (l Links) Resolve(p string) (string, error) {
	return resolveIn(p, l, nil, nil)
}

// Budget bounds the work of resolving links, in bytes of names looked
// up: each element of a path costs the length of the path up to it, and
// each link followed the length of where it leads. A path of 4096 bytes
// through 40 links costs megabytes, so a base of many links made to loop
// through long targets would take hours to resolve link by link, where
// a legitimate one takes a few hundred bytes a link. Left is what may
// still be spent; past it, resolving fails with ErrLinkWork.
type Budget struct {
	Left int64
}

// ErrLinkWork says resolving links took more work than its Budget.
var ErrLinkWork = errors.New("resolving its links takes more work than allowed")

// spend takes the cost of looking name up from b, for resolving p; a
// nil b has no bound.
func (b *Budget) spend(name, p string) error {
	if b == nil {
		return nil
	}
	if b.Left -= int64(len(name)) + 1; b.Left < 0 {
		return fmt.Errorf("/%.100s: %w", p, ErrLinkWork)
	}
	return nil
}

// ResolveWithin is Resolve, its work taken from b: it fails with
// ErrLinkWork once b is spent.
func (l Links) ResolveWithin(p string, b *Budget) (string, error) {
	return resolveIn(p, l, nil, b)
}

// resolveIn is Links.Resolve over the links of l and of more, within
// budget b when it is not nil.
func resolveIn(p string, l, more Links, b *Budget) (string, error) {
	var done []string
	todo := strings.Split(p, "/")
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		next := strings.Join(append(done, c), "/")
		if err := b.spend(next, p); err != nil {
			return "", err
		}
		target, ok := l[next]
		if !ok {
			target, ok = more[next]
		}
		if !ok {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("/%s: more than %d links to follow (a loop?)", p, maxLinkHops)
		}
		// continuity's walkLinks: filepath.Join(newdir, target), the
		// link's resolved directory and its target, cleaned.
		joined := target
		if !strings.HasPrefix(target, "/") {
			joined = "/" + strings.Join(done, "/") + "/" + target
		}
		if err := b.spend(joined, p); err != nil {
			return "", err
		}
		done = done[:0]
		todo = append(strings.Split(strings.TrimPrefix(path.Clean(joined), "/"), "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// DirMeta is a directory's mode (permission and special bits), owner and
// group.
type DirMeta struct {
	Mode     fs.FileMode
	UID, GID int
}

// defaultDir is what a parent directory a tree only implies gets (see
// Entries).
var defaultDir = DirMeta{Mode: 0o755}

// meta is e's mode and owner, as a directory's.
func (e *Entry) meta() DirMeta { return DirMeta{Mode: e.Mode, UID: e.UID, GID: e.GID} }

// View is what the image holds below a layer, as far as placing into it
// goes: its symlinks that lead to directories (or nowhere yet), and its
// directories.
//
// A layer entry under such a link must be written where the link leads:
// an importer creates a directory entry where a link is by replacing the
// link with an empty directory, so a layer holding "bin/app" on a base
// whose /bin is a link would leave the container a /bin with app alone,
// and no shell. A directory entry carries its mode and owner, and an
// importer applies them: one written for a directory below with others
// would change it (/tmp losing its sticky bit). A file placed where a
// directory is would replace it with all it holds. Docker's COPY follows
// the links, keeps the directories, and copies into them.
type View struct {
	Links Links
	Dirs  map[string]DirMeta
	// Implied are the directories a layer applied only implies (see
	// With): there, 0755 0:0, but nobody's choice. A directory a later
	// layer makes only where there is none (Entry.IfNew) keeps them.
	Implied map[string]bool
	// Files are the paths that hold neither a directory nor a link: a
	// directory placed there would replace the file, where Docker's
	// COPY fails (not a directory).
	Files map[string]bool
	// FileLinks are the base's symlinks that lead to files (through
	// other links too), each to its target as written. Only the file a
	// Dockerfile COPY places at its destination itself (FollowLink)
	// goes through one, written over the file it leads to, as
	// BuildKit's copy resolves its destination (continuity's RootPath)
	// and writes there; anything else placed at one replaces it, as an
	// importer does.
	FileLinks Links
	// WinDirs, for a Windows base, are the directories (of Dirs) whose
	// entry in the layer that last listed them carries a security
	// descriptor: the Windows union shows a directory with the metadata
	// of the top layer that lists it, so a layer that lists one again
	// must carry the base's, or it grants what the base does not. Equal
	// ones share one WinDir: a base of 100,000 entries has a few.
	WinDirs map[string]*WinDir
}

// WinDir is a Windows directory's security descriptor and attributes,
// as a layer's MSWINDOWS.rawsd and MSWINDOWS.fileattr records hold them.
type WinDir struct {
	// RawSD is the self-relative descriptor, base64 encoded.
	RawSD string
	// Attr are its file attributes, FILE_ATTRIBUTE_DIRECTORY among them.
	Attr uint32
}

// Empty says whether v holds nothing to place through.
func (v *View) Empty() bool {
	return v == nil || len(v.Links) == 0 && len(v.Dirs) == 0 && len(v.Implied) == 0 && len(v.Files) == 0 && len(v.FileLinks) == 0
}

// followed is p (clean, relative to the root) with every link along it
// followed, the base's links to files too (FileLinks), as BuildKit
// resolves a COPY's destination.
func (v *View) followed(p string) (string, error) {
	return resolveIn(p, v.Links, v.FileLinks, nil)
}

// IsDir says whether the image holds a directory at p (clean, relative
// to the root), or a link that leads to one.
func (v *View) IsDir(p string) bool {
	if v == nil {
		return false
	}
	r, err := v.Links.Resolve(p)
	if err != nil {
		return false
	}
	if r == "." {
		return true
	}
	_, ok := v.Dirs[r]
	return ok
}

// With returns v with t applied over it, as an importer applies a layer:
// its links and the directories it names added, whatever it puts at a path
// replacing what was there. A parent directory t only implies (see
// Entries) is not added: its mode and owner were nobody's choice, and a
// later layer that names it sets them. t's paths are where its entries
// land (see Through).
func (v *View) With(t *Tree) *View {
	out := &View{Links: Links{}, Dirs: map[string]DirMeta{}, Implied: map[string]bool{}, Files: map[string]bool{}, FileLinks: Links{}}
	if v != nil {
		maps.Copy(out.Links, v.Links)
		maps.Copy(out.FileLinks, v.FileLinks)
		maps.Copy(out.Dirs, v.Dirs)
		maps.Copy(out.Implied, v.Implied)
		maps.Copy(out.Files, v.Files)
		if v.WinDirs != nil {
			out.WinDirs = maps.Clone(v.WinDirs)
		}
	}
	out.Apply(t)
	return out
}

// Apply is With in place.
func (v *View) Apply(t *Tree) {
	// Walked in order, not indexed: the parents t synthesizes are the
	// parents no entry was added at.
	order := t.sorted()
	if v.Implied == nil {
		v.Implied = map[string]bool{}
	}
	if v.Files == nil {
		v.Files = map[string]bool{}
	}
	for _, e := range order {
		p := e.Path
		t.orderMu.Lock()
		synth := t.synthesized(e)
		t.orderMu.Unlock()
		if synth {
			delete(v.Files, p)
			delete(v.FileLinks, p)
			if _, ok := v.Dirs[p]; !ok {
				v.Implied[p] = true
			}
			continue
		}
		delete(v.Implied, p)
		delete(v.FileLinks, p)
		// The layer's entry is what the union shows now.
		delete(v.WinDirs, p)
		switch e.Kind {
		case Symlink:
			delete(v.Dirs, p)
			delete(v.Files, p)
			v.Links[p] = e.Link
		case Dir:
			delete(v.Links, p)
			delete(v.Files, p)
			v.Dirs[p] = e.meta()
		default:
			delete(v.Links, p)
			delete(v.Dirs, p)
			v.Files[p] = true
		}
	}
}

// Through returns t placed into what v holds: every entry under one of
// its links moved to where the link leads, and every directory that v
// holds given v's mode and owner. A link placed at a link's path replaces
// it, as written; a file placed there, or where v holds a directory, is
// an error: it would replace the directory and all it holds. t itself is
// returned when it goes through no link and meets no directory of v that
// it would change, which is the usual case.
func (t *Tree) Through(v *View) (*Tree, error) {
	if v.Empty() || !t.meets(v) {
		return t, nil
	}
	t.orderMu.Lock()
	if t.order == nil {
		t.sort()
	}
	order := t.order
	t.orderMu.Unlock()
	explicit := func(p string) (*Entry, bool) {
		t.orderMu.Lock()
		defer t.orderMu.Unlock()
		return t.lookup(p)
	}
	out := New()
	dirs := map[string]string{}
	// moved names where each entry of out was in t, for errors.
	moved := map[string]string{}
	resolve := func(p string) (string, error) {
		if r, ok := dirs[p]; ok {
			return r, nil
		}
		r, err := v.Links.Resolve(p)
		if err == nil {
			dirs[p] = r
		}
		return r, err
	}
	for _, e := range order {
		if _, ok := explicit(e.Path); !ok {
			continue // a parent Entries synthesizes; out makes its own
		}
		ne := *e
		var err error
		switch {
		case e.NoLinksFrom > 0 && int(e.NoLinksFrom) <= strings.Count(e.Path, "/")+1:
			ne.Path, err = noLinksInside(v, e, resolve, func(p string) bool {
				d, ok := explicit(p)
				return ok && d.Implied
			})
		case e.Kind == Dir:
			ne.Path, err = resolve(e.Path)
		default:
			if dir, name := path.Split(e.Path); dir != "" {
				dir, err = resolve(strings.TrimSuffix(dir, "/"))
				ne.Path = path.Join(dir, name)
			}
		}
		if err != nil {
			return nil, err
		}
		if ne.Path == "." {
			continue // a directory that is the root, through a link
		}
		_, toFile := v.FileLinks[ne.Path]
		if target, ok := v.Links[ne.Path]; (ok || toFile && e.FollowLink != nil) && ne.Kind == File && !e.ReplaceLink {
			if e.FollowLink == nil || v.IsDir(ne.Path) {
				return nil, linkInTheWay(v, ne.Path, target)
			}
			// Where the link leads, within the root: BuildKit resolves
			// the destination as Links.Resolve does (continuity's
			// RootPath), through the links to files too, and writes
			// over the file there (fsutil's ensureEmptyFileTarget).
			if ne.Path, err = v.followed(ne.Path); err != nil {
				return nil, err
			}
			if err := madeOnTheWay(v, out, ne.Path, *e.FollowLink, e.Chowned); err != nil {
				return nil, err
			}
		}
		if ne.IfNew && v.Implied[ne.Path] {
			// What a lower layer implied is there, as it wrote it.
			ne.Mode, ne.UID, ne.GID = defaultDir.Mode, defaultDir.UID, defaultDir.GID
		}
		if m, ok := v.Dirs[ne.Path]; ok {
			if ne.Kind != Dir {
				where := "/" + ne.Path
				if ne.Path != e.Path {
					where = fmt.Sprintf("/%s, which the image's links make /%s,", e.Path, ne.Path)
				}
				return nil, fmt.Errorf("%s: a %s placed where the image already holds a directory would replace it, and all it holds; place it into the directory (a destination ending in /) or elsewhere", where, ne.Kind)
			}
			if !ne.Copied {
				ne.Mode, ne.UID, ne.GID = m.Mode, m.UID, m.GID
			}
		}
		if err := out.Add(ne); err != nil {
			if old, ok := moved[ne.Path]; ok && old != e.Path {
				return nil, fmt.Errorf("/%s and /%s are one path in the image, /%s, through its links: %w", old, e.Path, ne.Path, err)
			}
			if ne.Path != e.Path {
				return nil, fmt.Errorf("/%s, which the image's links make /%s: %w", e.Path, ne.Path, err)
			}
			return nil, err
		}
		moved[ne.Path] = e.Path
	}
	if err := dirOverFile(v, out, moved); err != nil {
		return nil, err
	}
	// The parents out synthesizes that v holds keep v's mode and owner.
	var keep []Entry
	for p := range out.parents {
		if _, ok := out.entries[p]; ok {
			continue
		}
		if m, ok := v.Dirs[p]; ok && m != defaultDir {
			keep = append(keep, Entry{Path: p, Kind: Dir, Mode: m.Mode, UID: m.UID, GID: m.GID})
		}
	}
	for _, e := range keep {
		if err := out.Add(e); err != nil {
			return nil, err
		}
	}
	if t.mkdirs {
		if err := setgidParents(v, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setgidParents gives the directories out, a Dockerfile COPY's or
// ADD's tree placed through v, makes new in the image (not those it
// copies, Entry.Copied) the setgid bit of a setgid parent, and its group
// unless --chown owns them (Entry.Chowned) or an archive implies them
// (Entry.Implied): BuildKit's MkdirAll (fsutil copy/mkdir.go) makes them
// with os.Mkdir, where Linux gives a new directory the bit and group of
// a setgid parent, and chowns them only with --chown; go-archive's
// createImpliedDirectories chowns them to 0:0. Those it copies are
// chmodded and chowned as copied, and files too.
func setgidParents(v *View, out *Tree) error {
	// A new directory takes the bit only below one of v's: most images
	// hold none.
	setgid := false
	for _, m := range v.Dirs {
		if m.Mode&fs.ModeSetgid != 0 {
			setgid = true
			break
		}
	}
	if !setgid {
		return nil
	}
	var changed []Entry
	// metas are out's directories' modes and owners, as set here.
	metas := map[string]DirMeta{}
	for e := range out.All() {
		if e.Kind != Dir {
			continue
		}
		m := e.meta()
		_, held := v.Dirs[e.Path]
		if !e.Copied && !held && !v.Implied[e.Path] {
			parent := path.Dir(e.Path)
			pm, ok := metas[parent]
			if !ok {
				pm, ok = v.Dirs[parent]
			}
			if ok && pm.Mode&fs.ModeSetgid != 0 {
				m.Mode |= fs.ModeSetgid
				if !e.Chowned && !e.Implied {
					m.GID = pm.GID
				}
			}
		}
		metas[e.Path] = m
		if m != e.meta() {
			e.Mode, e.UID, e.GID = m.Mode, m.UID, m.GID
			changed = append(changed, e)
		}
	}
	for _, e := range changed {
		if err := out.Add(e); err != nil {
			return err
		}
	}
	return nil
}

// madeOnTheWay adds to out the directories above p that neither v nor
// out hold, made with meta m, as BuildKit's MkdirAll makes the parents
// of a destination it resolved through a link (with --chmod's mode and
// --chown's owner). Those left to out to imply are 0755 0:0 already.
func madeOnTheWay(v *View, out *Tree, p string, m DirMeta, chowned bool) error {
	if m == defaultDir {
		return nil
	}
	out.index()
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if _, ok := v.Dirs[dir]; ok || v.Implied[dir] {
			break // there, and so are its parents
		}
		if _, ok := out.entries[dir]; ok {
			continue
		}
		if err := out.Add(Entry{Path: dir, Kind: Dir, Mode: m.Mode, UID: m.UID, GID: m.GID, IfNew: true, Chowned: chowned}); err != nil {
			return err
		}
	}
	return nil
}

// LinkInside is a directory a Dockerfile's COPY copies (Entry.NoLinksFrom)
// where the image holds a link.
type LinkInside struct {
	// Path is the entry's path as placed, At the link's path in the image
	// and Leads where the link leads ("" if nowhere the image holds).
	Path, At, Target, Leads string
}

func (e *LinkInside) Error() string {
	if e.At == e.Path {
		return fmt.Sprintf("/%s: a directory copied where the image holds a link (to %s)", e.Path, e.Target)
	}
	return fmt.Sprintf("/%s: a directory copied where the image holds a link (/%s, to %s)", e.Path, e.At, e.Target)
}

// noLinksInside is where e lands through v: the elements of its path
// before e.NoLinksFrom through v's links, as resolve takes them, the
// others as they are, none of those that are directories a link of v
// unless implied says the tree holds that directory only as a parent
// (Entry.Implied) and the link leads to a directory: that one goes
// through the link too, as Docker's ADD unpacks such an archive (a link
// that leads nowhere fails there: not a directory).
func noLinksInside(v *View, e *Entry, resolve func(string) (string, error), implied func(string) bool) (string, error) {
	elems := strings.Split(e.Path, "/")
	k := int(e.NoLinksFrom) - 1
	cur := "."
	if k > 0 {
		var err error
		if cur, err = resolve(strings.Join(elems[:k], "/")); err != nil {
			return "", err
		}
	}
	dirs := len(elems)
	if e.Kind != Dir {
		dirs-- // a file or link at a link's path is Through's own case
	}
	for i := k; i < len(elems); i++ {
		cur = path.Join(cur, elems[i])
		target, ok := v.Links[cur]
		if ok && i < dirs && implied(strings.Join(elems[:i+1], "/")) && v.IsDir(cur) {
			var err error
			if cur, err = resolve(cur); err != nil {
				return "", err
			}
			continue
		}
		if ok && i < dirs {
			leads := ""
			if v.IsDir(cur) {
				if r, err := v.Links.Resolve(cur); err == nil {
					leads = r
				}
			}
			return "", &LinkInside{Path: strings.Join(elems[:i+1], "/"), At: cur, Target: target, Leads: leads}
		}
	}
	return cur, nil
}

// dirOverFile refuses out, t placed through v, where it holds a directory,
// its own or a parent of its entries, at a path where v holds a file.
// moved names where each entry of out was in t.
func dirOverFile(v *View, out *Tree, moved map[string]string) error {
	if len(v.Files) == 0 {
		return nil
	}
	var at []string
	check := func(p string) {
		if !v.Files[p] {
			return
		}
		if e, ok := out.entries[p]; ok && e.Kind == Dir || out.parents[p] {
			at = append(at, p)
		}
	}
	// The smaller side is looked up in the larger.
	if len(v.Files) <= len(out.entries)+len(out.parents) {
		for p := range v.Files {
			check(p)
		}
	} else {
		for p := range out.parents {
			check(p)
		}
		for p := range out.entries {
			check(p)
		}
	}
	if len(at) == 0 {
		return nil
	}
	slices.Sort(at)
	p := at[0]
	what := "a directory placed there"
	if e, ok := out.entries[p]; !ok || e.Kind != Dir {
		// Name the first entry under it, as t named it.
		first := ""
		for q := range moved {
			if strings.HasPrefix(q, p+"/") && (first == "" || q < first) {
				first = q
			}
		}
		if first != "" {
			what = fmt.Sprintf("what is placed under it (/%s)", moved[first])
		}
	}
	return fmt.Errorf("/%s: the image holds a file there, and %s needs it to be a directory; a layer would replace the file with one, where Docker's COPY fails (not a directory): place it elsewhere, or the file under another name", p, what)
}

// linkInTheWay is the error for a file placed at p, where v holds a link
// to target. A view holds links that lead to directories, and those that
// lead nowhere yet (a directory placed under one makes its target).
func linkInTheWay(v *View, p, target string) error {
	if v.IsDir(p) {
		return fmt.Errorf("/%s: a file placed where the image holds a link to a directory (%s) would replace the link; place it into the directory (a destination ending in /) or elsewhere", p, target)
	}
	to := target
	if r, err := v.Links.Resolve(p); err == nil {
		to = "/" + r
	}
	return fmt.Errorf("/%s: a file placed where the image holds a dangling link (to %s, which the image does not hold) would replace the link; Docker's COPY writes the file where the link leads: make %s the destination, or place the file elsewhere", p, target, to)
}

// meets says whether t goes through one of v's links, has an entry
// where v holds a directory that the entry would change, or a directory
// where v holds a file. It looks up the smaller side in the larger.
func (t *Tree) meets(v *View) bool {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	// hit says whether p, a path of t, is a link of v, a directory of v
	// whose mode or owner t's entry there would change, or a file of v
	// where t has a directory.
	hit := func(p string) bool {
		if _, ok := v.Links[p]; ok {
			return true
		}
		if _, ok := v.FileLinks[p]; ok {
			if e, ok := t.lookup(p); ok && e.Kind == File && e.FollowLink != nil {
				return true
			}
		}
		if v.Files[p] {
			e, ok := t.lookup(p)
			return !ok || e.Kind == Dir
		}
		m, ok := v.Dirs[p]
		if !ok {
			e, ok := t.lookup(p)
			return ok && e.IfNew && v.Implied[p] && e.meta() != defaultDir
		}
		if e, ok := t.lookup(p); ok {
			return e.Kind != Dir || e.meta() != m
		}
		return m != defaultDir
	}
	if len(v.Links)+len(v.Dirs)+len(v.Implied)+len(v.Files)+len(v.FileLinks) <= len(t.entries)+len(t.unindexed)+len(t.parents) {
		for p := range v.Links {
			if _, ok := t.lookup(p); ok || t.parents[p] {
				return true
			}
		}
		for p := range v.FileLinks {
			if _, ok := t.lookup(p); ok && hit(p) {
				return true
			}
		}
		for p := range v.Dirs {
			if _, ok := t.lookup(p); (ok || t.parents[p]) && hit(p) {
				return true
			}
		}
		for p := range v.Implied {
			if _, ok := t.lookup(p); ok && hit(p) {
				return true
			}
		}
		for p := range v.Files {
			if _, ok := t.lookup(p); (ok || t.parents[p]) && hit(p) {
				return true
			}
		}
		return false
	}
	for p := range t.parents {
		if hit(p) {
			return true
		}
	}
	found := false
	t.each(func(e *Entry) { found = found || hit(e.Path) })
	return found
}

// Same says whether a and b hold the same entries, as a layer writes
// them: which placement put an entry there (Entry.PlacedBy) is not
// written.
func Same(a, b *Tree) bool {
	if a == b {
		return true
	}
	ea, eb := a.Entries(), b.Entries()
	return slices.EqualFunc(ea, eb, func(x, y Entry) bool {
		x.PlacedBy, y.PlacedBy = 0, 0
		return x == y
	})
}
