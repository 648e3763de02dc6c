package dockerfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/patternmatcher/ignorefile"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tree"
)

// maxIgnoreSize bounds a .dockerignore read into memory.
const maxIgnoreSize = 1 << 20

// buildContext is the directory COPY and ADD read from, with the
// patterns of its ignore file.
type buildContext struct {
	// dir is absolute with symlinks resolved, so that a source that
	// resolves outside it is seen for what it is.
	dir string
	// ignore holds the .dockerignore patterns; nil without any.
	ignore     *patterns
	ignoreFile string
}

// openContext opens the build context dir. The ignore file is, as with
// BuildKit, the Dockerfile's name plus ".dockerignore" when there is one
// beside it, else .dockerignore at the context's root.
func openContext(dir, dockerfile string) (*buildContext, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("build context %s is not a directory", dir)
	}
	c := &buildContext{dir: real}
	// .containerignore is Podman's name for the same file.
	for _, f := range []string{dockerfile + ".dockerignore", filepath.Join(abs, ".dockerignore"), filepath.Join(abs, ".containerignore")} {
		data, err := bounded.ReadFile(f, maxIgnoreSize)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ignore file: %w", err)
		}
		patterns, err := ignorefile.ReadAll(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if c.ignore, err = newPatterns(patterns); err != nil {
			var pe *patternError
			if errors.As(err, &pe) {
				if lines := patternLines(data); pe.i < len(lines) {
					return nil, fmt.Errorf("%s:%d: %w", f, lines[pe.i], err)
				}
			}
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		numberPatterns(c.ignore, data)
		c.ignoreFile = f
		break
	}
	return c, nil
}

// rel is p's path relative to the context, slash-separated.
func (c *buildContext) rel(p string) string {
	r, err := filepath.Rel(c.dir, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

// ignored says whether the ignore file leaves p out of the context.
func (c *buildContext) ignored(p string) (bool, error) {
	r := c.rel(p)
	if c.ignore == nil || r == "." {
		return false, nil
	}
	out, _, err := c.ignore.match(r)
	if err != nil {
		return false, c.ignoreErr(err)
	}
	return out, nil
}

// leavesOut says whether the ignore file leaves the absolute path p out of
// the context (p inside it, resolved as the context's own path is).
func (c *buildContext) leavesOut(p string) bool {
	if c.ignore == nil || !strings.HasPrefix(p, c.dir+string(filepath.Separator)) {
		return false
	}
	out, err := c.ignored(p)
	return err == nil && out
}

// inside returns where p really is, refusing a path that resolves,
// through symlinks, outside the context: what a Dockerfile copies must be
// in what was sent to build.
func (c *buildContext) inside(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if real != c.dir && !strings.HasPrefix(real, c.dir+string(filepath.Separator)) {
		return "", fmt.Errorf("resolves to %s, outside the build context %s", real, c.dir)
	}
	return real, nil
}

// filter says which entries of a context directory a COPY leaves out:
// those the ignore file excludes, those its --exclude patterns match, and
// those a later instruction of a stage replaced (when a stage is
// flattened into a COPY --from).
type filter struct {
	ctx *buildContext
	// exclBase is the directory the --exclude patterns are relative to.
	exclBase string
	exclRaw  []string
	exclude  *patterns
	// omit holds absolute host paths, sorted.
	omit []string
	// keep, when set, holds the only absolute host paths kept (sorted),
	// files directly in exclBase: a group of a pattern's matches
	// (groupFiles). keepID names them in id.
	keep   []string
	keepID string
}

// keepOnly keeps only paths, files directly in f.exclBase.
func (f *filter) keepOnly(paths []string) {
	f.keep = slices.Sorted(slices.Values(paths))
	h := sha256.New()
	for _, p := range f.keep {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	f.keepID = fmt.Sprintf("%d:%x", len(f.keep), h.Sum(nil))
}

// newFilter is the filter of a source at base: the ignore file's, and
// the --exclude patterns raw, as written, compiled as excluded (nil for
// none), once for every source of the COPY (checkExclude).
func newFilter(ctx *buildContext, base string, raw []string, excluded *patterns) *filter {
	return &filter{ctx: ctx, exclBase: base, exclRaw: raw, exclude: excluded}
}

// withOmit returns f with more paths left out.
func (f *filter) withOmit(paths []string) *filter {
	g := *f
	g.omit = slices.Concat(f.omit, paths)
	slices.Sort(g.omit)
	g.omit = slices.Compact(g.omit)
	return &g
}

// id names what the filter does, for an artifact's identity.
func (f *filter) id() string {
	ign := ""
	if f.ctx != nil && f.ctx.ignore != nil {
		ign = f.ctx.ignoreFile
	}
	id := fmt.Sprintf("ignore=%s exclude=%s:%q omit=%q", ign, f.exclBase, f.exclRaw, f.omit)
	if f.keep != nil {
		id += " keep=" + f.keepID
	}
	return id
}

// skip says whether p is left out.
func (f *filter) skip(p string) (bool, error) {
	if f.omitted(p) {
		return true, nil
	}
	if f.ctx != nil {
		if out, err := f.ctx.ignored(p); out || err != nil {
			return out, err
		}
	}
	if f.exclude != nil {
		r, err := filepath.Rel(f.exclBase, p)
		if err != nil {
			return false, err
		}
		if r == "." {
			r = filepath.Base(p)
		}
		out, _, err := f.exclude.match(filepath.ToSlash(r))
		return out, err
	}
	return false, nil
}

// omitted says whether p is left out whatever the patterns say: replaced
// later in its stage, or not one of the files kept.
func (f *filter) omitted(p string) bool {
	if _, ok := slices.BinarySearch(f.omit, p); ok {
		return true
	}
	if f.keep != nil {
		if _, ok := slices.BinarySearch(f.keep, p); !ok {
			return true
		}
	}
	return false
}

// mayReinclude says whether an entry under a skipped directory can still
// be kept ("!" patterns), so that the walk must go on into it.
func (f *filter) mayReinclude() bool {
	return (f.ctx != nil && f.ctx.ignore != nil && f.ctx.ignore.pm.Exclusions()) || (f.exclude != nil && f.exclude.pm.Exclusions())
}

// walk is a filter's state along a walk of one directory: what the
// patterns said of each directory the walk is in, which its entries are
// matched from (patterns.next), as BuildKit's own walks do.
type walk struct {
	f *filter
	// dirs holds the directories the walk is in, the root first.
	dirs []walkDir
}

type walkDir struct {
	// prefix is the directory's path and a separator: what the paths
	// inside it begin with.
	prefix string
	// ignRel and exclRel are its path from the context and from the
	// --exclude base, slash-separated; ign and excl what the patterns
	// said of it.
	ignRel, exclRel string
	ign, excl       dirMatch
}

// walk starts a walk of root: the patterns are asked of root's own path
// once, through each directory above it, so that its entries are then
// matched from it.
func (f *filter) walk(root string) (*walk, error) {
	d := walkDir{prefix: root + string(filepath.Separator)}
	if f.ctx != nil && f.ctx.ignore != nil {
		if d.ignRel = f.ctx.rel(root); d.ignRel != "." {
			var err error
			if _, d.ign, err = f.ctx.ignore.match(d.ignRel); err != nil {
				return nil, f.ctx.ignoreErr(err)
			}
		}
	}
	if f.exclude != nil {
		r, err := filepath.Rel(f.exclBase, root)
		if err != nil {
			return nil, err
		}
		// The source itself is not matched: BuildKit's copier matches
		// only what is inside it.
		if d.exclRel = filepath.ToSlash(r); d.exclRel != "." {
			if _, d.excl, err = f.exclude.match(d.exclRel); err != nil {
				return nil, fmt.Errorf("--exclude: %w", err)
			}
		}
	}
	return &walk{f: f, dirs: []walkDir{d}}, nil
}

// visit says whether the walk's next entry p, named name, is left out
// (as skip would say), and for a directory left out whether nothing in it
// can be kept, so that the walk need not go into it.
func (w *walk) visit(p, name string, dir bool) (out, skipDir bool, err error) {
	for len(w.dirs) > 1 && !strings.HasPrefix(p, w.dirs[len(w.dirs)-1].prefix) {
		w.dirs = w.dirs[:len(w.dirs)-1]
	}
	parent := &w.dirs[len(w.dirs)-1]
	f := w.f
	omitted := f.omitted(p)
	// A directory is matched even when left out: what is inside it is
	// matched from it, should the walk go in.
	ask := dir || !omitted
	d := walkDir{prefix: p + string(filepath.Separator)}
	var ignored, excluded bool
	if f.ctx != nil && f.ctx.ignore != nil && ask {
		d.ignRel = joinRel(parent.ignRel, name)
		if ignored, d.ign, err = f.ctx.ignore.next(d.ignRel, parent.ign, dir); err != nil {
			return false, false, f.ctx.ignoreErr(err)
		}
	}
	// An ignored file is left out whatever --exclude says of it.
	if f.exclude != nil && ask && (dir || !ignored) {
		d.exclRel = joinRel(parent.exclRel, name)
		if excluded, d.excl, err = f.exclude.next(d.exclRel, parent.excl, dir); err != nil {
			return false, false, fmt.Errorf("--exclude: %w", err)
		}
	}
	if dir {
		w.dirs = append(w.dirs, d)
	}
	switch {
	case omitted:
		return true, dir && !f.mayReinclude(), nil
	case ignored || excluded:
		// What BuildKit skips: a directory nothing inside of which a
		// "!" pattern can take back (patterns.mayTakeBack). An ignored
		// entry is out whatever --exclude says, and an excluded one
		// whatever the ignore file says.
		skipDir = dir && ((ignored && !f.ctx.ignore.mayTakeBack(d.ignRel)) || (excluded && !f.exclude.mayTakeBack(d.exclRel)))
		return true, skipDir, nil
	}
	return false, false, nil
}

// joinRel is entry name of the directory dir, both slash-separated
// relative paths.
func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// entry is one kept path of a scanned directory.
type entry struct {
	rel  string
	kind tree.Kind
	abs  string
	info fs.FileInfo
	link string
}

// scan lists what of directory root the filter keeps, in walk order, and
// says whether anything was left out.
func scan(root string, f *filter) ([]entry, bool, error) {
	w, err := f.walk(root)
	if err != nil {
		return nil, false, err
	}
	var out []entry
	filtered := false
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		out1, skipDir, err := w.visit(p, d.Name(), d.IsDir())
		if err != nil {
			return err
		}
		if out1 {
			filtered = true
			if skipDir {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{rel: filepath.ToSlash(rel), abs: p, info: info}
		switch {
		case d.IsDir():
			e.kind = tree.Dir
		case info.Mode()&fs.ModeSymlink != 0:
			e.kind = tree.Symlink
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			e.kind = tree.File
		default:
			return tree.Unplaceable(p, info.Mode())
		}
		out = append(out, e)
		return nil
	})
	return out, filtered, err
}

// treeOf makes the tree of a scanned directory, as tree.FromDir does for
// a whole one: modes normalized, owner 0:0, symlinks kept.
func treeOf(entries []entry) (*tree.Tree, error) {
	t := tree.New()
	for _, e := range entries {
		var err error
		switch e.kind {
		case tree.Dir:
			err = t.Add(tree.Entry{Path: e.rel, Kind: tree.Dir, Mode: 0o755})
		case tree.Symlink:
			err = t.Add(tree.Entry{Path: e.rel, Kind: tree.Symlink, Mode: 0o777, Link: filepath.ToSlash(e.link)})
		default:
			// The stamp the scan took, as tree.FromDir keeps it: the
			// cache's digest of the file is then looked up without a
			// stat of its own (cache.RememberAt).
			err = t.Add(tree.Entry{Path: e.rel, Kind: tree.File, Mode: tree.NormalMode(e.info.Mode()), Source: e.abs, Size: e.info.Size(), Stamp: tree.StampOf(e.info)})
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// numberPatterns puts in each of ps's patterns that cannot compile its
// line of the ignore file data and its text as written there: the
// lines that hold a pattern, read one at a time as the file is read
// whole, in the order patternmatcher keeps them.
func numberPatterns(ps *patterns, data []byte) {
	if ps.bad == nil {
		return
	}
	lines := strings.Split(string(data), "\n")
	for i, n := range patternLines(data) {
		if i < len(ps.bad) && ps.bad[i] != nil {
			ps.bad[i].line, ps.bad[i].text = n, strings.TrimSpace(lines[n-1])
		}
	}
}

// patternLines is the line of the ignore file data that each of the
// patterns ignorefile.ReadAll reads of it is at, by their index, which is
// their index among patternmatcher's too: ReadAll trims them and leaves
// out the blank ones, which are all New leaves out. A line New refuses
// counts, for its error to name it.
func patternLines(data []byte) []int {
	var out []int
	for n, line := range strings.Split(string(data), "\n") {
		one, err := ignorefile.ReadAll(strings.NewReader(line))
		if err != nil || len(one) != 1 {
			continue
		}
		out = append(out, n+1)
	}
	return out
}

// ignoreErr says err, a match of the ignore file's patterns that failed,
// at the ignore file's line where it is a pattern's.
func (c *buildContext) ignoreErr(err error) error {
	var b *badPattern
	if errors.As(err, &b) && b.line > 0 {
		return fmt.Errorf("%s:%d: %w", c.ignoreFile, b.line, err)
	}
	return fmt.Errorf("%s: %w", c.ignoreFile, err)
}
