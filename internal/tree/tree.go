// Package tree describes a file tree to be placed in an image: the common
// currency between artifacts (which produce trees) and layer writers (which
// serialize them). Entries refer to file contents on disk, never in memory,
// so a tree of any size costs only its metadata.
package tree

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// Kind is the type of a tree entry.
type Kind uint8

const (
	File Kind = iota
	Dir
	Symlink
)

func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case Dir:
		return "dir"
	case Symlink:
		return "symlink"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Unplaceable is the error for a path that is none of the kinds a tree
// holds: a device, a pipe or a socket has no content to hash or place
// (/dev/zero would be read for ever).
func Unplaceable(path string, m fs.FileMode) error {
	return fmt.Errorf("%s is %s: only files, directories and symlinks can be placed", path, bounded.TypeName(m))
}

// Entry is one path in a tree.
//
// Its fields are in the order that packs them tightest (the
// pointers and strings first, the bytes last): a build holds one Entry
// per file, twice while it places an artifact, and 16 bytes less each
// is 3 MB at 100,000 files.
type Entry struct {
	// Path is slash-separated, clean, relative to the tree root, with no
	// leading slash ("usr/local/bin/hello").
	Path string
	// Source is the file on disk holding a regular file's content.
	Source string
	// Link is the target of a symlink, as written.
	Link string
	// Size is the content size of a regular file.
	Size     int64
	UID, GID int
	// FollowLink, when set, marks a file placed at the destination of a
	// Dockerfile COPY itself, which Docker's COPY resolves through the
	// image's links, the last element too: where the image holds a link
	// that leads nowhere, Through places the file where the link leads,
	// as BuildKit writes it there, and makes the directories on its way
	// that the image does not hold with this mode and owner.
	FollowLink *DirMeta
	// Archived is the mode and owner an archive's header gave the entry
	// (nil for one with no header, or with the mode the tree holds it
	// with and owner 0:0): what a Dockerfile's ADD keeps
	// (Placement.KeepArchiveModes, KeepArchiveOwners) where pallet
	// normalizes them otherwise.
	Archived *DirMeta
	// Linked is the file an archive's hard links name several times,
	// shared by the entries of its names (nil for a file with one): a
	// Linux layer holds the later of those it places as hard links to
	// the first (see Placement). Which names share it comes from the
	// archive's entries (archive.Options.Links), never from the inodes
	// of the disk the files are on.
	Linked *LinkGroup
	// Stamp is Source's status when FromDir or FromFile listed it (zero
	// otherwise): what facts about the file are remembered under, so
	// that the steps of a build after the listing need not stat it again.
	// A file changed since is caught when the layer is written.
	Stamp Stamp
	// Mode holds permission bits (and setuid/setgid/sticky) only.
	Mode fs.FileMode
	Kind Kind
	// LinkAs says how a symlink is typed on Windows when its target is
	// not in the image's layers (in a base layer, or not there at all):
	// Windows must know at creation whether a link is a directory link.
	LinkAs LinkKind
	// NoLinksFrom, when not zero, is the first element of Path (counting
	// from 1) that is inside what a Dockerfile's COPY copies rather than
	// on its way there: Docker's COPY follows the image's links to its
	// destination, but fails at a directory it copies where the image
	// holds a link (cannot copy to non-directory). Through refuses such
	// an entry instead of placing it through the link.
	NoLinksFrom uint16
	// IfNew marks a directory a placement makes only where the image
	// holds none: one the image holds already, or that a lower layer
	// implies, keeps its own mode and owner (see Through), as the
	// directories Docker's COPY finds on its way do.
	IfNew bool
	// Implied marks a directory an archive held no entry of its own for,
	// made as the parent of those below it: where the image holds a link
	// there, Docker's ADD unpacks through the link, as it does on the
	// way to its destination, so Through does too for an entry marked
	// NoLinksFrom.
	Implied bool
	// ReplaceLink marks a file placed by a Dockerfile COPY or ADD below
	// its destination: where the image holds a link at its path, the
	// file replaces the link, as BuildKit's copy removes it first
	// (fsutil's ensureEmptyFileTarget) and go-archive's unpack too; it
	// writes nothing where the link leads. Through refuses such a file
	// otherwise.
	ReplaceLink bool
	// Copied marks a directory a Dockerfile COPY or ADD copies below its
	// destination: where the image holds a directory there, the layer
	// gives it the entry's mode and owner, as BuildKit's copy chmods and
	// chowns it (fsutil's copyDirectoryOnly and copyFileInfo, with
	// overwriteTargetMetadata below the destination) and its unpack
	// does for an archive's own entries (go-archive's createTarFile).
	// Those at and above the destination, which its MkdirAll finds, and
	// those an archive only implies keep the image's (see Through).
	Copied bool
	// Chowned marks a directory a Dockerfile COPY makes on its way with
	// --chown's owner (OwnNewDirs), and a file placed at its destination
	// (FollowLink) whose COPY makes them so: BuildKit's MkdirAll chowns
	// it, where one made without --chown keeps the group a setgid
	// parent gives it (see Through).
	Chowned bool
	// PlacedBy is the Mark of the placement that put the entry in the
	// tree (see Placement), 0 for none: a collision between two of the
	// placements into one tree can then name both, though it is found
	// long after the first placed its entries. It fills the struct's
	// padding, and costs no byte.
	PlacedBy uint16
}

// LinkGroup is the identity of one file an archive names several times
// (Entry.Linked): entries are in one group when they share the pointer.
type LinkGroup struct {
	// A LinkGroup of size zero could share its address with another.
	_ byte
}

// LinkKind is what a symlink is taken to point at when the image cannot
// tell.
type LinkKind uint8

const (
	// LinkUnknown leaves the link to be typed from the image, as a file
	// link when the image cannot tell.
	LinkUnknown LinkKind = iota
	// LinkDir types the link as a directory link.
	LinkDir
	// LinkFile types the link as a file link.
	LinkFile
)

func (k LinkKind) String() string {
	switch k {
	case LinkDir:
		return "dir"
	case LinkFile:
		return "file"
	}
	return ""
}

// ParseLinkKind reads a recipe's "dir" or "file"; "" is LinkUnknown.
func ParseLinkKind(s string) (LinkKind, error) {
	switch s {
	case "":
		return LinkUnknown, nil
	case "dir":
		return LinkDir, nil
	case "file":
		return LinkFile, nil
	}
	return 0, fmt.Errorf("link %q: want dir or file", s)
}

// MaxID is the largest uid or gid an entry may carry. Tar headers hold any
// number, but the OCI image spec, Linux and containerd keep ids as uint32:
// a larger one is cut to its low 32 bits when the layer is unpacked, so
// 4294967296 would become 0, root. 4294967295 itself is (uid_t)-1, which
// chown(2) reads as "leave unchanged", so the file would keep the owner of
// whoever unpacks it (root, again); it is refused too.
const MaxID = 1<<32 - 2

// Tree is a set of entries keyed by path. The zero value is not usable; call New.
type Tree struct {
	entries map[string]*Entry
	// mkdirs says a Dockerfile's COPY or ADD placed the tree
	// (Placement.CopiedDirs): the directories it makes on its way, new
	// in the image, are made as BuildKit's MkdirAll makes them, taking
	// a setgid parent's bit and group (see Through).
	mkdirs bool
	// unindexed are entries FromDir or Place added, in order, but not to
	// entries: most trees of many files are only walked, and a map of
	// 100,000 paths was 4.5 MB and a tenth of a second per tree. index
	// adds them when a path is looked up.
	unindexed []*Entry
	// parents holds every ancestor directory of an entry, so that a file
	// placed where a directory is implied is caught in constant time.
	parents map[string]bool
	// chunk is where Add puts new entries: one allocation for many.
	chunk []Entry
	// order is every entry, synthesized parents too, sorted as Entries
	// returns them: a build asks a tree for its entries many times (its
	// digest, the record, placing, the layer key), and sorting 100,000
	// paths each time was a fifth of a no-op build. Adding drops it.
	// A tree, once made, is read by builds of several images at once:
	// orderMu guards the filling.
	order   []*Entry
	orderMu sync.Mutex
	// synth are the parents sort synthesized in order, by path: what
	// tells them from the entries added (see lookup).
	synth []Entry
}

// New returns an empty tree.
func New() *Tree { return &Tree{entries: map[string]*Entry{}, parents: map[string]bool{}} }

// CleanPath turns a path a user wrote (a destination, a WORKDIR, a path
// in an artifact) into the form used in a tree, and refuses paths that
// would leave the root. A backslash separates, as in a Windows
// destination (C:\k\bin\).
func CleanPath(p string) (string, error) {
	return cleanName(strings.ReplaceAll(p, "\\", "/"))
}

// cleanName is CleanPath for the name of an entry, found on disk or in an
// archive, where a backslash is a character of the name, as Linux and
// tar keep it: systemd's units are named system-systemd\x2dcryptsetup.slice.
// (A Windows layer refuses such a name, saying why: Windows reads the
// backslash as a separator.)
func cleanName(p string) (string, error) {
	// No file system, and no tar header, holds a NUL in a name: a dest
	// given as "/x\0" in YAML would fail only when the layer is written,
	// with the byte raw in the message and no line.
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q holds a NUL byte", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q leaves the tree (contains ..)", p)
		}
	}
	c := path.Clean("/" + p)
	c = strings.TrimPrefix(c, "/")
	if c == "" {
		c = "."
	}
	if len(c) > MaxPath || strings.Count(c, "/") >= MaxDepth {
		short := c
		if len(short) > 60 {
			short = short[:60] + "..."
		}
		return "", fmt.Errorf("path %q (%d bytes, %d deep) is longer than %d bytes or deeper than %d directories, the bound archive entries are held to as well (Linux refuses longer paths)", short, len(c), strings.Count(c, "/")+1, MaxPath, MaxDepth)
	}
	return c, nil
}

// MaxPath and MaxDepth bound a path in a tree, and archive extraction
// an entry's by them (Linux's PATH_MAX is 4096 bytes). A directory placed
// adds each of its parents to the tree, and a Dockerfile's WORKDIRs each
// make a layer of the whole chain: a WORKDIR 16,000 directories deep, a
// 32 KB line, took 40 s to place, and 2000 nested WORKDIRs of one
// letter each ran for minutes, where both bounds keep a chain at a few
// hundred entries.
const (
	MaxPath  = 4096
	MaxDepth = 256
)

// IsClean says whether p is a path as a tree holds it: clean, relative,
// within the root, and not the root itself. It is CleanPath's check
// without its rewriting, for paths read back from a store pallet wrote.
func IsClean(p string) bool {
	return p != "" && p != "." && p != ".." && path.Clean(p) == p && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "../")
}

// Add inserts an entry. Adding a directory where a directory already exists
// is allowed (the later metadata wins); any other collision is an error
// because it would make the image depend on placement order.
func (t *Tree) Add(e Entry) error {
	p, err := cleanName(e.Path)
	if err != nil {
		return err
	}
	if p == "." {
		return nil // the root is implicit
	}
	e.Path = p
	if err := checkIDs(e); err != nil {
		return err
	}
	t.index()
	t.order = nil
	if old, ok := t.entries[p]; ok {
		if old.Kind == Dir && e.Kind == Dir {
			*old = e
			return nil
		}
		return &Collision{Path: p, Kind: e.Kind, Held: *old}
	}
	if e.Kind != Dir && t.parents[p] {
		return &Collision{Path: p, Kind: e.Kind, Held: t.firstBelow(p)}
	}
	// A path under a non-directory is a conflict too.
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if old, ok := t.entries[dir]; ok && old.Kind != Dir {
			return &Collision{Path: p, Kind: e.Kind, Held: *old}
		}
	}
	for dir := path.Dir(p); dir != "." && !t.parents[dir]; dir = path.Dir(dir) {
		t.parents[dir] = true
	}
	t.entries[p] = t.newEntry(e)
	return nil
}

// Collision is Add's error for an entry that meets one the tree holds:
// at its path, at a parent that is no directory, or, for an entry that
// is no directory, below its path. Held is the entry met (the first by
// path of those below), whose PlacedBy says which placement put it there.
type Collision struct {
	// Path and Kind are the entry's that was added.
	Path string
	Kind Kind
	Held Entry
}

func (c *Collision) Error() string {
	switch {
	case c.Held.Path == c.Path:
		return fmt.Sprintf("%s: placed twice (%s and %s)", c.Path, c.Held.Kind, c.Kind)
	case strings.HasPrefix(c.Held.Path, c.Path+"/"):
		return fmt.Sprintf("%s: placed as a %s where a directory holds other entries", c.Path, c.Kind)
	}
	return fmt.Sprintf("%s: parent %s is a %s", c.Path, c.Held.Path, c.Held.Kind)
}

// firstBelow is the entry of t first by path below directory p, which
// t implies (t.parents), for an error to name: t is indexed, and the
// walk over every entry is made only then.
func (t *Tree) firstBelow(p string) Entry {
	var first *Entry
	for q, e := range t.entries {
		if strings.HasPrefix(q, p+"/") && (first == nil || comparePath(q, first.Path) < 0) {
			first = e
		}
	}
	if first == nil {
		return Entry{Path: p, Kind: Dir}
	}
	return *first
}

// entryChunk is how many entries Add allocates at once.
const entryChunk = 256

// newEntry gives a place for e in t.chunk.
func (t *Tree) newEntry(e Entry) *Entry {
	if len(t.chunk) == cap(t.chunk) {
		t.chunk = make([]Entry, 0, entryChunk)
	}
	t.chunk = append(t.chunk, e)
	return &t.chunk[len(t.chunk)-1]
}

// checkIDs keeps an owner that a runtime would read as another (see MaxID)
// out of the tree, whatever put it there.
func checkIDs(e Entry) error {
	for _, id := range []int{e.UID, e.GID} {
		if id < 0 || uint64(id) > MaxID {
			return fmt.Errorf("%s: owner %d:%d: ids must be 0 to %d", e.Path, e.UID, e.GID, uint64(MaxID))
		}
	}
	return nil
}

// Imply marks the directories of t that implied says are Implied (see
// Entry.Implied). It is for the tree an archive was just unpacked into,
// or read back from where it was kept, before anyone reads it.
func (t *Tree) Imply(implied func(p string) bool) {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	// Walked, not indexed: a tree of 200,000 files read back from the
	// cache would get a map of every path (12 MB) for its directories.
	t.each(func(e *Entry) {
		if e.Kind == Dir && implied(e.Path) {
			e.Implied = true
		}
	})
}

// each calls f with every entry added to t, indexed or not (not the
// parents Entries synthesizes). Called with orderMu held.
func (t *Tree) each(f func(*Entry)) {
	for _, e := range t.entries {
		f(e)
	}
	for _, e := range t.unindexed {
		f(e)
	}
}

// UnixMode is m's permission bits with setuid, setgid and sticky, as
// chmod(2) and tar headers number them (04000, 02000, 01000).
func UnixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// FromUnixMode is the Mode of an Entry for chmod(2) bits u: its
// permission, setuid, setgid and sticky bits (u&07777), the rest ignored.
func FromUnixMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// Archive gives the entries of t the mode and owner header says an
// archive's header gave them (see Entry.Archived). It is for the tree an
// archive was just unpacked into, or read back from where it was kept,
// before anyone reads it.
func (t *Tree) Archive(header func(p string) (DirMeta, bool)) {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	t.each(func(e *Entry) {
		if h, ok := header(e.Path); ok && h != (DirMeta{Mode: e.Mode}) {
			e.Archived = &h
		}
	})
}

// Link makes each group of names of t one file an archive's hard links
// name several times (see Entry.Linked). It is for the tree an archive
// was just unpacked into, or read back from where it was kept, before
// anyone reads it. A name that is no regular file of t is an error.
func (t *Tree) Link(groups [][]string) error {
	if len(groups) == 0 {
		return nil // no index of every path for nothing
	}
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	for _, names := range groups {
		g := new(LinkGroup)
		for _, p := range names {
			e, ok := t.lookup(p)
			if !ok || e.Kind != File {
				return fmt.Errorf("hard link group names %q, which is no file of the tree", p)
			}
			e.Linked = g
		}
	}
	return nil
}

// Get returns the entry at p, if any.
func (t *Tree) Get(p string) (*Entry, bool) {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	return t.lookup(p)
}

// Len is the number of explicit entries.
func (t *Tree) Len() int {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	return len(t.entries) + len(t.unindexed)
}

// index adds t.unindexed to t.entries. A tree being read is guarded by
// orderMu; one being changed is no one else's.
func (t *Tree) index() {
	if len(t.unindexed) == 0 {
		return
	}
	entries := make(map[string]*Entry, len(t.entries)+len(t.unindexed))
	maps.Copy(entries, t.entries)
	for _, e := range t.unindexed {
		entries[e.Path] = e
	}
	t.entries, t.unindexed = entries, nil
}

// Entries returns every entry sorted by path, with any missing parent
// directory synthesized (mode 0755, owner 0:0) so that each parent comes
// before its children exactly once, as both Linux and Windows importers want.
func (t *Tree) Entries() []Entry {
	order := t.sorted()
	out := make([]Entry, len(order))
	for i, e := range order {
		out[i] = *e
	}
	return out
}

// All yields the entries Entries returns, in its order, without making
// the slice: one walk over 100,000 entries need not allocate 17 MB.
func (t *Tree) All() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for _, e := range t.sorted() {
			if !yield(*e) {
				return
			}
		}
	}
}

// sorted is t's entries in path order, sorted first if need be.
func (t *Tree) sorted() []*Entry {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	if t.order == nil {
		t.sort()
	}
	return t.order
}

// sort fills t.order.
func (t *Tree) sort() {
	t.index()
	// parents already holds every ancestor: the paths are known without
	// walking up from each entry, and sorting strings moves 16 bytes per
	// swap where an Entry is over 100.
	paths := make([]string, 0, len(t.entries)+len(t.parents))
	for p := range t.entries {
		paths = append(paths, p)
	}
	for dir := range t.parents {
		if _, ok := t.entries[dir]; !ok {
			paths = append(paths, dir)
		}
	}
	slices.SortFunc(paths, comparePath)
	t.order = make([]*Entry, len(paths))
	t.synth = make([]Entry, 0, len(paths)-len(t.entries))
	for i, p := range paths {
		e, ok := t.entries[p]
		if !ok {
			t.synth = append(t.synth, Entry{Path: p, Kind: Dir, Mode: defaultDir.Mode})
			e = &t.synth[len(t.synth)-1]
		}
		t.order[i] = e
	}
}

// lookup gives the entry added to t at p, not a parent Entries
// synthesizes, without indexing t, where it is sorted (t.order): a
// search of the sorted entries. Indexed, a tree of 100,000 files kept a
// map of every path (5 MB) for as long as it lived, where only a few
// paths (those of the base's links and directories, see meets) are
// looked up. Called with orderMu held.
func (t *Tree) lookup(p string) (*Entry, bool) {
	if len(t.unindexed) == 0 || t.order == nil {
		t.index()
		e, ok := t.entries[p]
		return e, ok
	}
	i, ok := slices.BinarySearchFunc(t.order, p, func(e *Entry, p string) int { return comparePath(e.Path, p) })
	if !ok || t.synthesized(t.order[i]) {
		return nil, false
	}
	return t.order[i], true
}

// Clone is a tree of t's entries, in entries of its own: a layer takes
// the entries of the tree it places last (Move), which would empty
// another holder's. Only what was added is copied: the parents t makes
// up stay made up, where added they would be directories the tree holds,
// whose mode and owner a placement gives the image. Nil for nil.
func (t *Tree) Clone() (*Tree, error) {
	if t == nil {
		return nil, nil
	}
	order := t.sorted()
	c := New()
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	for _, e := range order {
		if t.synthesized(e) {
			continue
		}
		if err := c.Add(*e); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// synthesized says whether e, of t.order, is a parent sort synthesized.
// Called with orderMu held.
func (t *Tree) synthesized(e *Entry) bool {
	if e.Kind != Dir || len(t.synth) == 0 {
		return false
	}
	i, ok := slices.BinarySearchFunc(t.synth, e.Path, func(s Entry, p string) int { return comparePath(s.Path, p) })
	return ok && &t.synth[i] == e
}

// comparePath orders paths component by component, so that "a/b" comes
// right after "a" even when a sibling such as "a-b" exists: that is byte
// order with '/' below every other byte. It allocates nothing, which is
// what keeps sorting 100,000 entries fast; layer digests depend on this
// exact order.
func comparePath(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		switch {
		case x == y:
			continue
		case x == '/':
			return -1
		case y == '/':
			return 1
		case x < y:
			return -1
		default:
			return 1
		}
	}
	return cmp.Compare(len(a), len(b))
}

// NormalMode is the mode pallet gives a file unless told otherwise: 0755 if
// any execute bit is set, 0644 otherwise. Umasks and checkout modes differ
// between machines; normalizing keeps digests equal.
func NormalMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// FromFile builds a tree holding one regular file named name.
func FromFile(file, name string) (*Tree, error) {
	info, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", file)
	}
	t := New()
	return t, t.Add(Entry{Path: name, Kind: File, Mode: NormalMode(info.Mode()), Source: file, Size: info.Size(), Stamp: StampOf(info)})
}

// Placement says where and how a tree lands in an image.
type Placement struct {
	// Dest is the absolute image path. A trailing slash, or a tree with more
	// than one entry, means "into this directory"; a one-file tree and a Dest
	// without trailing slash means "as this file".
	Dest string
	// FileMode, when non-zero, replaces the mode of every regular file.
	FileMode fs.FileMode
	// DirMode, when non-zero, is the mode of the directories the
	// placement places, as Docker's COPY --chmod gives it to them: those
	// it copies get it whole, those it makes on its way (Dest's parents,
	// and Dest for a tree that goes into it) its permission bits, as a
	// mkdir makes them; those the image holds keep theirs (Through).
	DirMode fs.FileMode
	// Chmod, when set, changes the mode of each regular file and
	// directory the placement copies, after FileMode and DirMode: it is
	// given the entry's mode, with fs.ModeDir for a directory, and
	// returns the new one, as a Dockerfile COPY's symbolic --chmod
	// (u+x, a+rX) changes each entry's own mode. The directories the
	// placement makes on its way are not copied: it does not change them.
	Chmod    func(fs.FileMode) fs.FileMode
	UID, GID int
	// From, when set, takes only this path of src (relative to its root):
	// a file or link is placed alone, as Dest or into it with a trailing
	// slash, so a placement can rename one file; a directory's contents
	// are placed into Dest.
	From string
	// LinkAs is given to every symlink placed (see Entry.LinkAs).
	LinkAs LinkKind
	// OwnNewDirs gives UID and GID to the directories the placement
	// makes on its way (Dest's parents, and Dest when the tree goes into
	// it) where the image holds none (Entry.IfNew), as Docker's COPY
	// --chown makes them; else they are implied, 0755 0:0.
	OwnNewDirs bool
	// ImpliedRootOwned places the directories src only implies
	// (Entry.Implied) 0:0 whatever UID and GID say, as Docker's ADD
	// --chown unpacks an archive: go-archive's createImpliedDirectories
	// makes them with the daemon's root pair, not --chown's owner.
	ImpliedRootOwned bool
	// KeepArchiveModes gives the files and directories the mode their
	// archive's header gave them (Entry.Archived), before FileMode,
	// DirMode and Chmod, and KeepArchiveOwners their owner, as Docker's
	// ADD unpacks a tar archive (go-archive's createTarFile chmods and
	// lchowns each entry as its header says): a rootfs keeps its sticky
	// /tmp, its setuid binaries and its users' files.
	KeepArchiveModes, KeepArchiveOwners bool
	// ReplaceLinks marks the files the placement places, but the one at
	// Dest itself (FollowLink), Entry.ReplaceLink.
	ReplaceLinks bool
	// CopiedDirs marks the directories the placement copies below the
	// Dockerfile COPY's destination Entry.Copied: those of src (but the
	// ones an archive only implies, unless it is a COPY --from, which
	// copies them from the stage), and, with StageDest, those it makes
	// below StageDest, which BuildKit copies from the stage.
	CopiedDirs bool
	// NoLinksBelow, when set, is the destination of the Dockerfile COPY
	// the placement is part of (Dest or above it): the entries placed
	// below it are marked Entry.NoLinksFrom.
	NoLinksBelow string
	noLinks      uint16
	// FollowLink marks the file a one-file placement puts at Dest, named
	// without a trailing slash, Entry.FollowLink.
	FollowLink bool
	// StageDest, when set, is the destination of the Dockerfile COPY
	// --from a stage the placement is part of (Dest or above it), and
	// StageMade the mode and owner of the directories the placement makes
	// at and above it, as BuildKit's copy makes them there (fsutil's
	// MkdirAll, with the COPY's own --chmod and --chown, else 0755 0:0).
	// DirMode, UID, GID and OwnNewDirs are then the stage's, for what the
	// placement copies and makes below StageDest, which BuildKit copies
	// from the stage with each directory's own mode and owner.
	StageDest string
	StageMade DirMeta
	// StageDirs are the mode and owner the stage gave the directories the
	// placement makes below StageDest, by path (clean, relative to the
	// root), where the stage made them otherwise than DirMode and
	// OwnNewDirs say: a stage's own COPY --from made its destination and
	// the directories above it as its own (StageMade), and those below it
	// as its stage had them, at each depth of a chain of stages. Their
	// modes are as the COPY --from leaves them, its own symbolic --chmod
	// applied: Chmod, which holds the stage's too, does not change them.
	StageDirs map[string]DirMeta
	// linked gives the link groups of the entries placed new ones, the
	// same for the entries of one group: the names one placement places
	// are linked to each other, not to those another placement of the
	// same tree places, which are other files, as unpacking the archive
	// twice makes them.
	linked map[*LinkGroup]*LinkGroup
	// take says the entries of the tree placed are the placement's to
	// change and keep (see Move).
	take bool
	// Mark is given to every entry the placement puts in the tree, the
	// directories it makes on its way too (Entry.PlacedBy): a caller
	// placing several things into one tree numbers them from 1, to
	// tell which put an entry there.
	Mark uint16
}

// MadeDir is the mode and owner of directory p (a clean path), which pl
// makes on its way: StageMade at and above StageDest, StageDirs' below
// it, else DirMode's permission bits, owned by pl's owner only with
// OwnNewDirs.
func (pl Placement) MadeDir(p string) DirMeta {
	if pl.StageDest != "" {
		if d, err := CleanPath(pl.StageDest); err == nil && (p == d || p == "." || strings.HasPrefix(d, p+"/")) {
			return pl.StageMade
		}
		if m, ok := pl.StageDirs[p]; ok {
			return m
		}
	}
	m := DirMeta{Mode: pl.madeDirMode()}
	if pl.OwnNewDirs {
		m.UID, m.GID = pl.UID, pl.GID
	}
	return m
}

// stageDir says whether directory p (a clean path), which pl makes,
// is one of StageDirs, whose mode MadeDir gives as it is to be.
func (pl Placement) stageDir(p string) bool {
	if pl.StageDest == "" {
		return false
	}
	if d, err := CleanPath(pl.StageDest); err != nil || p == d || p == "." || strings.HasPrefix(d, p+"/") {
		return false
	}
	_, ok := pl.StageDirs[p]
	return ok
}

// copiedMade says whether directory p (a clean path), which pl makes,
// is one BuildKit copies from the stage (CopiedDirs): below StageDest.
func (pl Placement) copiedMade(p string) bool {
	if !pl.CopiedDirs || pl.StageDest == "" {
		return false
	}
	d, err := CleanPath(pl.StageDest)
	return err == nil && (d == "." || strings.HasPrefix(p, d+"/"))
}

// copied is Entry.Copied for e, an entry of the tree pl places.
func (pl Placement) copied(e Entry) bool {
	return pl.CopiedDirs && e.Kind == Dir && (!e.Implied || pl.StageDest != "")
}

// madeDirMode is the mode of a directory pl makes on its way (see
// DirMode).
func (pl Placement) madeDirMode() fs.FileMode {
	if pl.DirMode != 0 {
		return pl.DirMode.Perm()
	}
	return defaultDir.Mode
}

// noLinksFrom is Entry.NoLinksFrom for the entries pl places.
func (pl Placement) noLinksFrom() (uint16, error) {
	if pl.NoLinksBelow == "" {
		return 0, nil
	}
	p, err := CleanPath(pl.NoLinksBelow)
	if err != nil {
		return 0, err
	}
	if p == "." {
		return 1, nil
	}
	return uint16(strings.Count(p, "/") + 2), nil
}

// Place adds src to t according to pl.
func (t *Tree) Place(src *Tree, pl Placement) error {
	return t.place(src, pl)
}

// Move is Place for a src that no one reads again, which it leaves
// empty: where Place copies the entries of src, Move changes them into
// t's. The artifact placed once, the common case, is then not held
// twice while it is placed: for 100,000 files, the second copy was 17 MB
// at the peak of a build's memory.
func (t *Tree) Move(src *Tree, pl Placement) error {
	pl.take = true
	defer src.clear()
	return t.place(src, pl)
}

// clear empties t, which Move took the entries of.
func (t *Tree) clear() {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	t.entries, t.parents = map[string]*Entry{}, map[string]bool{}
	t.unindexed, t.chunk, t.order, t.synth = nil, nil, nil, nil
}

func (t *Tree) place(src *Tree, pl Placement) error {
	dest, err := CleanPath(pl.Dest)
	if err != nil {
		return err
	}
	if pl.noLinks, err = pl.noLinksFrom(); err != nil {
		return err
	}
	if pl.CopiedDirs {
		t.mkdirs = true
	}
	pl.linked = map[*LinkGroup]*LinkGroup{}
	intoDir := strings.HasSuffix(pl.Dest, "/") || dest == "."
	// The whole of src is walked, not copied: placing 100,000 files
	// need not hold a second list of them.
	entries := src.All()
	var first []Entry
	for e := range entries {
		if first = append(first, e); len(first) == 2 {
			break
		}
	}
	one := len(first) == 1 && first[0].Kind == File
	if pl.From != "" {
		var sub []Entry
		if sub, one, err = subtree(src.Entries(), pl.From); err != nil {
			return err
		}
		entries, first = slices.Values(sub), sub
	}
	if one && !intoDir {
		e := first[0]
		e.Path = dest
		if pl.FollowLink {
			made := pl.MadeDir(path.Dir(dest))
			e.FollowLink = &made
			e.Chowned = pl.OwnNewDirs
		}
		if err := t.newDirs(path.Dir(dest), pl); err != nil {
			return err
		}
		return t.add(e, pl)
	}
	t.index()
	empty := len(t.entries) == 0
	if dest != "." && pl.OwnNewDirs {
		if err := t.newDirs(dest, pl); err != nil {
			return err
		}
	} else if dest != "." {
		// dest's parents are made with DirMode, if set.
		if err := t.newDirs(path.Dir(dest), pl); err != nil {
			return err
		}
		uid, gid := pl.UID, pl.GID
		made := pl.MadeDir(dest)
		if pl.StageDest != "" {
			uid, gid = made.UID, made.GID
		}
		// An earlier placement of a COPY --from that made dest made
		// it as the stage did: the first of the stage's COPYs that
		// made a directory made it, BuildKit's MkdirAll leaves it.
		_, held := t.entries[dest]
		if pl.StageDest == "" || !held && !t.parents[dest] {
			copied := pl.copiedMade(dest)
			if copied && !pl.stageDir(dest) {
				made.Mode = pl.chmod(Entry{Kind: Dir, Mode: made.Mode})
			}
			if err := t.Add(Entry{Path: dest, Kind: Dir, Mode: made.Mode, UID: uid, GID: gid, NoLinksFrom: pl.noLinks, Copied: copied, Chowned: pl.OwnNewDirs, PlacedBy: pl.Mark}); err != nil {
				return err
			}
		}
	} else if err := checkIDs(Entry{Path: dest, UID: pl.UID, GID: pl.GID}); err != nil {
		return err
	}
	if pl.From == "" && (dest == "." && empty || dest != "." && !t.parents[dest]) {
		// placeNew does not check each entry's owner, as Add does: an
		// archive's own owners, where pl keeps them, are checked here.
		if pl.KeepArchiveOwners {
			for e := range src.All() {
				if a := e.Archived; a != nil {
					if err := checkIDs(Entry{Path: path.Join(dest, e.Path), UID: a.UID, GID: a.GID}); err != nil {
						return err
					}
				}
			}
		}
		t.placeNew(src, dest, pl, empty)
		return nil
	}
	for e := range entries {
		e.Path = path.Join(dest, e.Path)
		if err := t.add(e, pl); err != nil {
			return err
		}
	}
	return nil
}

// newDirs adds dir and its parents as directories placement pl makes
// (Entry.IfNew), when pl.OwnNewDirs or pl.DirMode says so: those t holds
// already, made by an earlier placement, are left as that one made them.
// They are pl's owner's only with OwnNewDirs (0:0 otherwise, as Docker's
// COPY without --chown makes them).
func (t *Tree) newDirs(dir string, pl Placement) error {
	if !pl.OwnNewDirs && pl.DirMode == 0 && !pl.copiedMade(dir) {
		return nil
	}
	t.index()
	var dirs []string
	for ; dir != "."; dir = path.Dir(dir) {
		if _, ok := t.entries[dir]; ok || t.parents[dir] {
			break
		}
		dirs = append(dirs, dir)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		// One below StageDest is copied from the stage, whatever the
		// image holds there, and --chmod's symbolic mode changes it.
		copied := pl.copiedMade(dirs[i])
		if !copied && !pl.OwnNewDirs && pl.DirMode == 0 {
			continue // implied, 0755 0:0
		}
		m := pl.MadeDir(dirs[i])
		if copied && !pl.stageDir(dirs[i]) {
			m.Mode = pl.chmod(Entry{Kind: Dir, Mode: m.Mode})
		}
		if err := t.Add(Entry{Path: dirs[i], Kind: Dir, Mode: m.Mode, UID: m.UID, GID: m.GID, IfNew: !copied, Copied: copied, Chowned: pl.OwnNewDirs, NoLinksFrom: pl.noLinks, PlacedBy: pl.Mark}); err != nil {
			return err
		}
	}
	return nil
}

// placeNew places all of src under dest, where t has nothing yet. The
// entries of a tree are clean paths, each after its parent, so placed
// under a new directory none can collide with another or with t's: Add's
// checks need not be made again for each of 100,000 files. The paths are
// one string, the entries a slice. If t was empty, the placed entries
// come in its order already, and it need not be sorted.
func (t *Tree) placeNew(src *Tree, dest string, pl Placement, empty bool) {
	prefix := dest + "/"
	if dest == "." {
		prefix = ""
	}
	n, size := 0, 0
	for e := range src.All() {
		n++
		size += len(prefix) + len(e.Path)
	}
	var paths string
	if prefix != "" {
		var sb strings.Builder
		sb.Grow(size)
		for e := range src.All() {
			sb.WriteString(prefix)
			sb.WriteString(e.Path)
		}
		paths = sb.String()
	}
	if empty {
		t.sort() // dest and its parents
	} else {
		t.order = nil
	}
	order := src.sorted()
	// Moved, src's entries become t's, changed where they are; placed,
	// they are copied into one slice.
	var placed []Entry
	if !pl.take {
		placed = make([]Entry, 0, n)
	}
	start := len(t.order)
	lastDir := ""
	for _, ne := range order {
		e := *ne
		p := e.Path
		if prefix != "" {
			p, paths = paths[:len(prefix)+len(p)], paths[len(prefix)+len(p):]
		}
		e.Path = p
		if pl.take {
			*ne = pl.onto(e)
		} else {
			placed = append(placed, pl.onto(e))
			ne = &placed[len(placed)-1]
		}
		if empty {
			t.order = append(t.order, ne)
		} else {
			t.unindexed = append(t.unindexed, ne)
		}
		// Entries of one directory come one after another.
		if dir := path.Dir(p); dir != "." && dir != lastDir {
			t.parents[dir] = true
			lastDir = dir
		}
	}
	if empty {
		t.unindexed = t.order[start:]
	}
}

// subtree returns the entries at and under from, relative to from: a file
// or link alone under its base name (one is true), or a directory's
// contents without the directory itself.
func subtree(entries []Entry, from string) (out []Entry, one bool, err error) {
	p, err := taken(from, func() []Entry { return entries })
	if err != nil {
		return nil, false, err // it names the path, quoted
	}
	if p == "." {
		return entries, false, nil
	}
	if out, one = under(entries, p); len(out) == 0 {
		// A path that names nothing is a mistake in the recipe, and an
		// empty directory is not worth a placement.
		return nil, false, fmt.Errorf("path %s: %w%s", from, ErrNoPath, nearNames(entries, p))
	}
	return out, one, nil
}

// Taken is the name in t that a placement's From takes, as Place takes
// it: clean, "." for the whole tree, a path written with a backslash
// resolved by UserPath against what t holds. For the record of what a
// placement took, which its From split would misname.
func (t *Tree) Taken(from string) (string, error) {
	var entries []Entry
	return taken(from, func() []Entry {
		if entries == nil {
			entries = t.Entries()
		}
		return entries
	})
}

// taken is Taken of the tree whose entries entries gives, asked only
// where from holds a backslash.
func taken(from string, entries func() []Entry) (string, error) {
	p, err := CleanPath(from)
	if err != nil || p == "." {
		return p, err
	}
	return UserPath(from, func(name string) bool {
		out, _ := under(entries(), name)
		return len(out) > 0
	})
}

// UserPath is the name in an artifact of a path the user wrote there (a
// placement's path, a licence file), whose backslashes separate, as in a
// dest (bin\x.exe), unless the artifact has a name holding them as
// characters (systemd's lib/systemd/system/system-systemd\x2dcryptsetup.slice):
// that name is the one meant. Where the artifact has both, which was
// meant cannot be told, and the error (ErrAmbiguousPath) names both.
// has says whether the artifact has a name, as what the caller takes (a
// file, a directory that holds anything). A path that names neither is
// returned with its backslashes as separators, for the caller to say
// it is missing.
func UserPath(from string, has func(name string) bool) (string, error) {
	p, err := CleanPath(from)
	if err != nil {
		return "", err
	}
	lit, err := cleanName(from)
	if err != nil || lit == p {
		return p, nil
	}
	switch lh, ph := has(lit), has(p); {
	case lh && ph:
		return "", fmt.Errorf("path %s %w: the artifact has both %s, a name holding a backslash, and %s (written %s, it is the latter)", from, ErrAmbiguousPath, lit, p, p)
	case lh:
		return lit, nil
	}
	return p, nil
}

// UserPathNames are the names UserPath may give for from: its backslashes
// as characters, and as separators. One when from holds none.
func UserPathNames(from string) []string {
	p, err := CleanPath(from)
	if err != nil {
		return nil
	}
	if lit, err := cleanName(from); err == nil && lit != p {
		return []string{lit, p}
	}
	return []string{p}
}

// ErrAmbiguousPath is a path the user wrote with a backslash that names
// two things in the artifact: a name holding the backslash, and the path
// it separates.
var ErrAmbiguousPath = errors.New("is ambiguous")

// under returns the entry at p if it is not a directory (one), else the
// entries below p, with paths relative to it.
func under(entries []Entry, p string) (out []Entry, one bool) {
	for _, e := range entries {
		switch {
		case e.Path == p && e.Kind != Dir:
			e.Path = path.Base(p)
			return []Entry{e}, true
		case strings.HasPrefix(e.Path, p+"/"):
			e.Path = strings.TrimPrefix(e.Path, p+"/")
			out = append(out, e)
		}
	}
	return out, false
}

// ErrNoPath is a placement's path that names nothing the artifact holds.
var ErrNoPath = errors.New("not in the artifact, or an empty directory")

// nearNames says which entries a path that names nothing was likely
// meant for: the same name but for case or a ".exe" (path: antctl, in
// the build of a Windows artifact, is antctl.exe; {{exe}} names both),
// or the same base name elsewhere in the artifact. Empty when there are
// none.
func nearNames(entries []Entry, p string) string {
	const most = 3
	var near []string
	for _, e := range entries {
		bare := strings.TrimSuffix(strings.TrimSuffix(e.Path, ".exe"), ".EXE")
		if strings.EqualFold(e.Path, p) || strings.EqualFold(bare, p) || path.Base(e.Path) == path.Base(p) {
			near = append(near, e.Path)
		}
	}
	if len(near) == 0 {
		return ""
	}
	slices.Sort(near)
	more := ""
	if len(near) > most {
		near, more = near[:most], ", ..."
	}
	return " (the artifact has " + strings.Join(near, ", ") + more + ")"
}

func (t *Tree) add(e Entry, pl Placement) error {
	return t.Add(pl.onto(e))
}

// onto is e as pl places it: its modes, link kind and owner, and how it
// meets what the image holds at its path.
func (pl Placement) onto(e Entry) Entry {
	if pl.KeepArchiveModes && e.Archived != nil && (e.Kind == File || e.Kind == Dir) {
		e.Mode = e.Archived.Mode
	}
	if pl.FileMode != 0 && e.Kind == File {
		e.Mode = pl.FileMode
	}
	if pl.DirMode != 0 && e.Kind == Dir {
		e.Mode = pl.DirMode
	}
	e.Mode = pl.chmod(e)
	if pl.LinkAs != LinkUnknown && e.Kind == Symlink {
		e.LinkAs = pl.LinkAs
	}
	e.UID, e.GID = pl.owner(e)
	e.NoLinksFrom = pl.noLinks
	// A file that goes through a link to the file it leads to does not
	// replace the link.
	e.ReplaceLink = pl.ReplaceLinks && e.Kind == File && e.FollowLink == nil
	e.Copied = pl.copied(e)
	e.PlacedBy = pl.Mark
	if e.Linked != nil && pl.linked != nil {
		g, ok := pl.linked[e.Linked]
		if !ok {
			g = new(LinkGroup)
			pl.linked[e.Linked] = g
		}
		e.Linked = g
	}
	return e
}

// owner is the owner pl gives e (see ImpliedRootOwned,
// KeepArchiveOwners).
func (pl Placement) owner(e Entry) (uid, gid int) {
	if pl.ImpliedRootOwned && e.Implied {
		return 0, 0
	}
	if pl.KeepArchiveOwners && e.Archived != nil {
		return e.Archived.UID, e.Archived.GID
	}
	return pl.UID, pl.GID
}

// chmod is e's mode once pl.Chmod changed it; a link's mode is not
// changed (BuildKit's copy chmods no symlink).
func (pl Placement) chmod(e Entry) fs.FileMode {
	if pl.Chmod == nil || e.Kind != File && e.Kind != Dir {
		return e.Mode
	}
	m := e.Mode
	if e.Kind == Dir {
		m |= fs.ModeDir
	}
	return pl.Chmod(m) & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}
