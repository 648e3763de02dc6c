package dockerfile

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/util/system"

	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/tree"
)

// A COPY --from=stage is flattened: pallet builds no stage image, so the
// files are taken from where the stage's own COPY and ADD took them (the
// build context, a download), re-rooted at this COPY's destination, with
// the owner and mode the stage gave them unless --chown or --chmod say
// otherwise (as BuildKit keeps them). What a later instruction of the
// stage replaced is left out of the earlier placement, so the flattened
// layer holds what the stage held.

// stageItems resolves a COPY --from source in stage st: a path, or a
// pattern matched against the paths the stage is known to hold.
func (e *evaluator) stageItems(st *stageState, src string, pos plan.Pos) ([]item, int, error) {
	p, err := system.NormalizePath("/", src, st.platform.OS, false)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", src, err)
	}
	// On a Windows stage, C:\K names the C:\k it holds.
	p = st.content.spell(path.Clean(p))
	paths := []string{p}
	if containsWildcards(p) {
		if !st.emptyBase {
			return nil, 0, fmt.Errorf("%s: a pattern over stage %s, whose base %s pallet does not read: BuildKit matches it against the base's files too, and pallet knows only what the stage's COPY and ADD put there; name the stage's files one by one, or copy them from the build context", src, st.def.label(), st.base)
		}
		paths = nil
		for _, k := range slices.Sorted(maps.Keys(st.content.nodes)) {
			if ok, _ := path.Match(p, k); ok {
				paths = append(paths, k)
			}
		}
	}
	var items []item
	for _, q := range paths {
		got, err := e.stagePath(st, q, pos)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, got...)
	}
	return items, len(paths), nil
}

// stagePath resolves one path of stage st.
func (e *evaluator) stagePath(st *stageState, p string, pos plan.Pos) ([]item, error) {
	c := st.content
	if q, ok := c.maybeDirAt(p); ok {
		return nil, fmt.Errorf("%s: stage %s copies %s to %s (line %d), into the directory there if its base %s holds one, else as that file; pallet reads the base only when it builds, so it cannot tell where the file is: end that destination with / (into the directory) or give the file's full path", p, st.def.label(), q.pm.IntoDirAs, q.root, q.pm.Pos.Line, st.base)
	}
	n, ok := c.nodes[p]
	if !ok {
		if q, ok := c.opaqueAbove(p); ok {
			return nil, fmt.Errorf("%s is inside the archive unpacked at %s (%s), whose files pallet knows only once it is fetched: copy %s from the stage whole", p, q.root, q.pm.Pos, q.root)
		}
		base := ""
		if !st.emptyBase {
			base = fmt.Sprintf("; the files of its base %s are not read", st.base)
		}
		return nil, fmt.Errorf("%s: not in stage %s (pallet knows what the stage's COPY and ADD put there%s)", p, st.def.label(), base)
	}
	if n.kind == tree.Dir && !st.emptyBase {
		return nil, e.baseDirError(st, p)
	}
	switch n.kind {
	case tree.Symlink:
		return nil, fmt.Errorf("%s is a symlink in stage %s; copy what it points to", p, st.def.label())
	case tree.File:
		q := c.placed[n.by]
		s := q.src
		if q.src.kind == srcDir {
			s = &source{kind: srcFile, path: hostPath(q.src, relTo(p, q.root)), hint: path.Join(q.src.hint, relTo(p, q.root))}
		}
		it := q.item(s)
		it.name, it.files, it.pos = path.Base(p), oneFile, pos
		return []item{it}, nil
	}
	var items []item
	for i, q := range c.placed {
		var (
			it  *item
			err error
		)
		switch {
		case under(q.root, p) && q.src.members != nil:
			for _, it := range e.groupWithin(c, i, q, p) {
				it.pos = pos
				items = append(items, it)
			}
			continue
		case under(q.root, p):
			it, err = e.within(c, i, q, p)
		case under(p, q.root) && q.src.isDir():
			it, err = e.inside(c, i, q, p, st)
		}
		if err != nil {
			return nil, err
		}
		if it != nil {
			it.pos = pos
			items = append(items, *it)
		}
	}
	return items, nil
}

// baseDirError refuses directory p of stage st, whose base pallet does
// not read: BuildKit copies the directory whole, with what the base holds
// there, and a flattened copy would hold the stage's COPYs' part alone.
func (e *evaluator) baseDirError(st *stageState, p string) error {
	var lines []string
	seen := map[int]bool{}
	for _, q := range st.content.placed {
		if (under(q.root, p) || under(p, q.root) && q.src.isDir()) && !seen[q.pm.Pos.Line] {
			seen[q.pm.Pos.Line] = true
			lines = append(lines, strconv.Itoa(q.pm.Pos.Line))
		}
	}
	by := ""
	if len(lines) > 0 {
		by = fmt.Sprintf(" (line %s)", strings.Join(lines, ", "))
	}
	return fmt.Errorf("%s is a directory of stage %s, whose base %s pallet does not read: BuildKit copies all the stage holds there, what the base holds too, and pallet knows only what the stage's COPY and ADD put there%s; copy their sources from the build context instead, or name the stage's files one by one, or start the stage FROM scratch", p, st.def.label(), st.base, by)
}

// within re-places placement q (number i), which lies at or under the
// copied directory p.
func (e *evaluator) within(c *content, i int, q *placed, p string) (*item, error) {
	if n := c.nodes[q.root]; n.by != i && !(n.kind == tree.Dir && q.src.isDir()) {
		return nil, nil // replaced whole by a later instruction
	}
	copied := q.item(q.src)
	it := &copied
	it.files, it.rel, it.fromDir, it.stageDirs = q.files, relTo(q.root, p), true, stageDirs(q, p)
	if q.src.kind != srcDir {
		return it, nil
	}
	s, files, err := e.narrowed(c, i, q, q.root)
	if err != nil {
		return nil, err
	}
	it.src, it.files = s, files
	return it, nil
}

// inside takes the part under p of placement q (number i), a directory
// that holds p.
func (e *evaluator) inside(c *content, i int, q *placed, p string, st *stageState) (*item, error) {
	if q.src.opaque() {
		return nil, fmt.Errorf("%s is inside the archive unpacked at %s (%s), whose files pallet knows only once it is fetched: copy %s from stage %s whole", p, q.root, q.pm.Pos, q.root, st.def.label())
	}
	if q.src.kind != srcDir || q.files[relTo(p, q.root)] != tree.Dir {
		return nil, nil // an empty WORKDIR directory, or nothing of q is there
	}
	s, files, err := e.narrowed(c, i, q, p)
	if err != nil {
		return nil, err
	}
	it := q.item(s)
	it.files, it.fromDir = files, true
	return &it, nil
}

// narrowed is the context directory of placement q (number i) from its
// path at, without what later placements of the stage replaced.
func (e *evaluator) narrowed(c *content, i int, q *placed, at string) (*source, map[string]tree.Kind, error) {
	var omit []string
	for rel, k := range q.files {
		full := path.Join(q.root, rel)
		if !under(full, at) {
			continue
		}
		if n := c.nodes[full]; n.by != i && !(k == tree.Dir && n.kind == tree.Dir) {
			omit = append(omit, hostPath(q.src, rel))
		}
	}
	s := q.src.sub(relTo(at, q.root))
	if len(omit) > 0 {
		t := *s
		t.filter = s.filter.withOmit(omit)
		s = &t
	}
	files, err := e.shape(s)
	if err != nil {
		return nil, nil, err
	}
	return s, files, nil
}

// stageDirs is how the stage made the directories below p, a directory
// a COPY --from copies, on the way to placement q (number i) within it:
// those q made (its destination too, when it places a directory's
// content there), as q's own placement made them (tree.Placement.MadeDir:
// StageMade at and above a COPY --from's destination, its StageDirs
// below it, else its DirMode and owner), by path relative to p; nil when
// q is none of the stage's COPY --from, whose directories the item's
// DirMode and owner describe, unless q's symbolic --chmod changes what
// it copies: the directories it makes on its way it does not change
// (fsutil's MkdirAll makes them 0755).
func stageDirs(q *placed, p string) map[string]tree.DirMeta {
	if q.pm.StageDest == "" && len(q.pm.ModeChanges) == 0 {
		return nil
	}
	pl := tree.Placement{DirMode: q.pm.DirMode, UID: q.pm.UID, GID: q.pm.GID, OwnNewDirs: q.pm.OwnNewDirs,
		StageDest: q.pm.StageDest, StageMade: q.pm.StageMade, StageDirs: q.pm.StageDirs}
	end := q.root
	if !q.src.isDir() {
		end = path.Dir(end)
	}
	dirs := map[string]tree.DirMeta{}
	for d := end; d != p && d != "/" && under(d, p); d = path.Dir(d) {
		dirs[relTo(d, p)] = pl.MadeDir(strings.TrimPrefix(d, "/"))
	}
	return dirs
}

// relTo is p relative to root ("" for root itself).
func relTo(p, root string) string {
	if p == root {
		return ""
	}
	if root == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, root+"/")
}

func hostPath(s *source, rel string) string {
	return filepath.Join(s.path, filepath.FromSlash(rel))
}

// groupWithin is within for a group of files (groupFiles): its files one
// by one, as they were placed before they were grouped, each left out
// where a later instruction replaced it.
func (e *evaluator) groupWithin(c *content, i int, q *placed, p string) []item {
	var items []item
	for _, m := range q.src.members {
		root := path.Join(q.root, filepath.Base(m))
		if n := c.nodes[root]; n.by != i {
			continue
		}
		it := q.item(e.memberSource(m))
		it.name, it.files, it.rel, it.fromDir, it.stageDirs = filepath.Base(m), oneFile, relTo(root, p), true, stageDirs(q, p)
		items = append(items, it)
	}
	return items
}

// item is an item of src copied as q placed it: with q's modes and owner,
// which a COPY --from of the stage keeps.
func (q *placed) item(src *source) item {
	return item{src: src, mode: q.pm.Mode, modeChanges: q.pm.ModeChanges, impliedRootOwned: q.pm.ImpliedRootOwned, archiveOwners: q.pm.KeepArchiveOwners,
		dirMode: q.pm.DirMode, ownNewDirs: q.pm.OwnNewDirs, uid: q.pm.UID, gid: q.pm.GID}
}
