package dockerfile

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/patternmatcher"
)

// buildkitMatch is BuildKit's answer for rel, found as its walks find it
// (fsutil's filter and copier): each directory from the top matched from
// its parent's MatchInfo.
func buildkitMatch(t testing.TB, pm *patternmatcher.PatternMatcher, rel string) bool {
	t.Helper()
	parts := strings.Split(rel, "/")
	var info patternmatcher.MatchInfo
	var m bool
	for i := range parts {
		var err error
		if m, info, err = pm.MatchesUsingParentResults(strings.Join(parts[:i+1], "/"), info); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// leftOutBuildKit says whether BuildKit leaves p out: omitted, or its
// answer from the ignore file or --exclude is yes.
func leftOutBuildKit(t testing.TB, f *filter, p string) bool {
	if f.omitted(p) {
		return true
	}
	if f.ctx != nil && f.ctx.ignore != nil {
		if r := f.ctx.rel(p); r != "." && buildkitMatch(t, f.ctx.ignore.pm, r) {
			return true
		}
	}
	if f.exclude != nil {
		r, err := filepath.Rel(f.exclBase, p)
		if err != nil {
			t.Fatal(err)
		}
		// The source itself, as a COPY of one file asks it, is matched by
		// its name: pallet's rule (skip), kept as it was.
		if r == "." {
			r = filepath.Base(p)
		}
		return buildkitMatch(t, f.exclude.pm, filepath.ToSlash(r))
	}
	return false
}

// keptBuildKit lists what of root BuildKit keeps, each path decided on
// its own: a walk that goes into every directory the patterns leave out
// (only an omitted one is skipped, as scan has always done), so that the
// directories scan skips are seen to hold nothing kept.
func keptBuildKit(t testing.TB, root string, f *filter) ([]string, bool) {
	var kept []string
	filtered := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		if f.omitted(p) {
			filtered = true
			if d.IsDir() && !f.mayReinclude() {
				return filepath.SkipDir
			}
			return nil
		}
		if leftOutBuildKit(t, f, p) {
			filtered = true
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		kept = append(kept, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept, filtered
}

// scanByParents is scan as it was, each path matched again through each
// of its parents (MatchesOrParentMatches): what scan is measured against,
// and what it still says whenever no "!" pattern is there.
func scanByParents(t testing.TB, root string, f *filter) ([]string, bool) {
	skip := func(p string) bool {
		if f.omitted(p) {
			return true
		}
		if f.ctx != nil && f.ctx.ignore != nil {
			if r := f.ctx.rel(p); r != "." {
				out, err := f.ctx.ignore.pm.MatchesOrParentMatches(r)
				if err != nil {
					t.Fatal(err)
				}
				if out {
					return true
				}
			}
		}
		if f.exclude != nil {
			r, err := filepath.Rel(f.exclBase, p)
			if err != nil {
				t.Fatal(err)
			}
			if r == "." {
				r = filepath.Base(p)
			}
			out, err := f.exclude.pm.MatchesOrParentMatches(filepath.ToSlash(r))
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		return false
	}
	var kept []string
	filtered := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		if skip(p) {
			filtered = true
			if d.IsDir() && !f.mayReinclude() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		kept = append(kept, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept, filtered
}

func scanned(t testing.TB, root string, f *filter) ([]string, bool) {
	t.Helper()
	entries, filtered, err := scan(root, f)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range entries {
		kept = append(kept, e.rel)
	}
	return kept, filtered
}

// randomNames are what random trees and patterns are made of: names that
// wildcards, classes and suffixes can each catch some of.
var randomNames = []string{"a", "b", "ab", "ba", "x.md", "y.go", ".git", "node_modules", "a.b"}

// randomTree writes a random tree under dir and returns its directories
// and files, relative, slash-separated.
func randomTree(t testing.TB, r *rand.Rand, dir string) (dirs, files []string) {
	var fill func(rel string, depth int)
	fill = func(rel string, depth int) {
		for _, i := range r.Perm(len(randomNames))[:r.IntN(4)+1] {
			p := joinRel(rel, randomNames[i])
			full := filepath.Join(dir, filepath.FromSlash(p))
			if depth < 4 && r.IntN(2) == 0 {
				if err := os.Mkdir(full, 0o755); err != nil {
					t.Fatal(err)
				}
				dirs = append(dirs, p)
				fill(p, depth+1)
				continue
			}
			if err := os.WriteFile(full, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	fill(".", 0)
	return dirs, files
}

// randomPattern is a pattern of the kinds an ignore file holds: names,
// "*", "**", "?", classes, escapes, "." and "..", with or without a
// leading or a trailing "/" or a "!", or a path of the tree itself.
func randomPattern(r *rand.Rand, paths []string) string {
	var p string
	if len(paths) > 0 && r.IntN(3) == 0 {
		p = paths[r.IntN(len(paths))]
	} else {
		segs := []string{"*", "**", "?", "a*", "*.md", "[ab]", "[^a]*", "?.go", ".", "..", "*b", "**a*", "a**", `\*`, `a\b`, "*^*", "n*_*s"}
		var parts []string
		for range r.IntN(3) + 1 {
			if r.IntN(2) == 0 {
				parts = append(parts, randomNames[r.IntN(len(randomNames))])
			} else {
				parts = append(parts, segs[r.IntN(len(segs))])
			}
		}
		p = strings.Join(parts, "/")
	}
	if r.IntN(5) == 0 {
		p = "/" + p
	}
	if r.IntN(5) == 0 {
		p += "/"
	}
	switch r.IntN(9) {
	case 0, 1, 2:
		p = "!" + p
	case 3:
		// Left as " p" by patternmatcher, which a matcher of its own
		// would trim.
		p = "! " + p
	}
	return p
}

// whole is f with its patterns asked of patternmatcher's own loop
// (MatchesUsingParentResults), not one by one.
func whole(f *filter) *filter {
	g := *f
	if f.ctx != nil && f.ctx.ignore != nil {
		ctx, ign := *f.ctx, *f.ctx.ignore
		ign.each = nil
		ctx.ignore = &ign
		g.ctx = &ctx
	}
	if f.exclude != nil {
		excl := *f.exclude
		excl.each = nil
		g.exclude = &excl
	}
	return &g
}

// invalidPattern says err is a pattern refused as BuildKit refuses it: a
// "!" that, cleaned, is left with nothing ("!/.").
func invalidPattern(err error) bool {
	return err != nil && strings.Contains(err.Error(), `illegal exclusion pattern: "!"`)
}

// On random trees and random patterns, scan keeps what BuildKit keeps,
// each path decided on its own; it keeps what it kept before (each path
// matched through each parent) whenever no "!" pattern is there; and the
// directories it skips hold nothing kept. The per-path answers of skip
// (a COPY of one file) are BuildKit's too.
func TestScanMatchesBuildKit(t *testing.T) {
	r := rand.New(rand.NewPCG(106, 1))
	differed := 0
	for iter := range 400 {
		dir := t.TempDir()
		dirs, files := randomTree(t, r, dir)
		all := slices.Concat(dirs, files)
		var ignore, exclude []string
		for range r.IntN(7) {
			ignore = append(ignore, randomPattern(r, all))
		}
		for range r.IntN(4) {
			exclude = append(exclude, randomPattern(r, all))
		}
		if len(ignore) > 0 {
			if err := os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte(strings.Join(ignore, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, err := openContext(dir, filepath.Join(dir, "Dockerfile"))
		if invalidPattern(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The scan starts at the context or at a directory in it, and
		// --exclude is relative to it or, as for a part of a source
		// (source.sub), to a directory above it.
		root, base := ctx.dir, ctx.dir
		if len(dirs) > 0 && r.IntN(2) == 0 {
			root = filepath.Join(ctx.dir, filepath.FromSlash(dirs[r.IntN(len(dirs))]))
			if r.IntN(2) == 0 {
				base = filepath.Dir(root)
			} else {
				base = root
			}
		}
		var excluded *patterns
		if len(exclude) > 0 {
			excluded, err = newPatterns(exclude)
			if invalidPattern(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		f := newFilter(ctx, base, exclude, excluded)
		if r.IntN(4) == 0 {
			f = f.withOmit([]string{filepath.Join(ctx.dir, filepath.FromSlash(all[r.IntN(len(all))]))})
		}
		what := fmt.Sprintf("iteration %d: ignore %q, exclude %q (base %s), scan of %s, tree %q", iter, ignore, exclude, ctx.rel(base), ctx.rel(root), all)

		got, gotFiltered := scanned(t, root, f)
		want, wantFiltered := keptBuildKit(t, root, f)
		if !reflect.DeepEqual(got, want) || gotFiltered != wantFiltered {
			t.Fatalf("%s:\nscan kept %q (filtered %v)\nBuildKit keeps %q (filtered %v)", what, got, gotFiltered, want, wantFiltered)
		}
		// The same through patternmatcher's own loop, as patterns that
		// cannot be asked one by one are.
		if pm, pmFiltered := scanned(t, root, whole(f)); !reflect.DeepEqual(pm, want) || pmFiltered != wantFiltered {
			t.Fatalf("%s:\nscan with patternmatcher's loop kept %q (filtered %v)\nBuildKit keeps %q (filtered %v)", what, pm, pmFiltered, want, wantFiltered)
		}
		before, beforeFiltered := scanByParents(t, root, f)
		if !reflect.DeepEqual(got, before) || gotFiltered != beforeFiltered {
			differed++
			if !strings.Contains(strings.Join(slices.Concat(ignore, exclude), "\n"), "!") {
				t.Fatalf("%s: with no \"!\" pattern, scan kept %q, before %q", what, got, before)
			}
		}
		for _, rel := range all {
			p := filepath.Join(ctx.dir, filepath.FromSlash(rel))
			out, err := f.skip(p)
			if err != nil {
				t.Fatal(err)
			}
			if want := leftOutBuildKit(t, f, p); out != want {
				t.Fatalf("%s: skip(%s) = %v, BuildKit says %v", what, rel, out, want)
			}
		}
	}
	// The trees and patterns must reach where the two ways differ, or
	// the comparison proves less than it seems to.
	if differed == 0 {
		t.Errorf("no random case where BuildKit's answers differ from MatchesOrParentMatches's")
	}
	t.Logf("%d of 400 random cases kept otherwise than before", differed)
}

// bigContext writes a context of n files four directories deep
// (d*/s*/t*/f*.*) and an ignore file of m patterns of the kinds real ones
// hold: paths, "**/" suffixes, wildcards, directory trees, and one in
// five a "!" exception.
func bigContext(t testing.TB, n, m, depth int) string {
	dir := t.TempDir()
	exts := []string{"go", "md", "txt", "tmp", "js"}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%20), fmt.Sprintf("s%d", (i/20)%10), fmt.Sprintf("t%d", (i/200)%5))
		for k := 3; k < depth; k++ {
			p = filepath.Join(p, fmt.Sprintf("u%d", k))
		}
		if i < 1000 {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(p, fmt.Sprintf("f%d.%s", i, exts[i%len(exts)])), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for i := range m {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "d%d/s%d/t%d/f%d.tmp\n", i%20, (i/20)%10, (i/200)%5, i)
		case 1:
			fmt.Fprintf(&b, "**/gen%d_*.go\n", i)
		case 2:
			fmt.Fprintf(&b, "d*/cache%d\n", i)
		case 3:
			fmt.Fprintf(&b, "build%d/**\n", i)
		case 4:
			fmt.Fprintf(&b, "!d%d/keep%d.md\n", i%20, i)
		}
	}
	b.WriteString("**/*.tmp\nd3\n!d3/s1/t0/f*.go\n")
	if err := os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A large context under a long ignore file is scanned at a cost of one
// match per pattern and entry, most of them a substring test: 1000
// patterns and 20,000 files seven deep took 12.5 s matched through every
// parent (scanByParents), 3 s through patternmatcher's loop, and take
// 0.3 s now, on a machine shared with other builds. The bound leaves ten
// times that for a loaded one and still fails the old way.
func TestScanManyPatternsBounded(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("a time bound, checked without the race detector")
	}
	dir := bigContext(t, 20000, 1000, 6)
	ctx, err := openContext(dir, filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFilter(ctx, ctx.dir, nil, nil)
	start := time.Now()
	kept, _ := scanned(t, ctx.dir, f)
	took := time.Since(start)
	t.Logf("1000 patterns, 20000 files: %d paths kept in %s", len(kept), took)
	if took > 4*time.Second {
		t.Errorf("scan took %s, want well under the 12.5 s of matching through every parent", took)
	}
	// f0.go is kept; f3.tmp (**/*.tmp) and all of d3 are not.
	has := map[string]bool{}
	for _, k := range kept {
		has[k] = true
	}
	if deep := "d0/s0/t0/u3/u4/u5/f0.go"; !has[deep] || has["d3/s0/t0/u3/u4/u5/f3.tmp"] || has["d3"] || len(kept) < 15000 {
		t.Errorf("kept %d paths: %s %v, d3 %v, d3/.../f3.tmp %v", len(kept), deep, has[deep], has["d3"], has["d3/s0/t0/u3/u4/u5/f3.tmp"])
	}
}

// "a/x" then "!a": BuildKit leaves a/x out (the exception was not tried
// on a, where it could change nothing, so a/x does not know it matched
// a), where MatchesOrParentMatches kept it. A COPY of the directory and
// one of the file agree.
func TestIgnoreExceptionOfADirectory(t *testing.T) {
	files := map[string]string{"a/x": "x", "a/y": "y", ".dockerignore": "a/x\n!a\n"}
	p := mustPlan(t, mergeFiles(files, map[string]string{"Dockerfile": "FROM scratch\nCOPY a /a/\n"}), Options{})
	kind := p.Artifacts[p.Images[0].Platforms[0].Layers[0].Placements[0].Artifact].Kind
	k, ok := kind.(*localDir)
	if !ok {
		t.Fatalf("COPY a is a %T, want a filtered directory (a/x left out)", kind)
	}
	if kept, _ := scanned(t, k.Path, k.filter); !reflect.DeepEqual(kept, []string{"y"}) {
		t.Errorf("COPY a kept %q, want only y", kept)
	}
	if _, err := planFiles(t, mergeFiles(files, map[string]string{"Dockerfile": "FROM scratch\nCOPY a/x /x\n"}), Options{}); err == nil || !strings.Contains(err.Error(), "excluded from the build context") {
		t.Errorf("COPY a/x: %v, want it excluded", err)
	}
}

func mergeFiles(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// A directory left out is walked into only when a "!" pattern can take
// something inside it back, as fsutil decides: node_modules is not
// walked for "!README.md", where any "!" pattern used to send the walk
// into every directory left out.
func TestLeftOutDirectoryWalkedOnlyForAnException(t *testing.T) {
	tests := []struct {
		patterns []string
		dir      string
		want     bool
	}{
		{[]string{"node_modules", "!README.md"}, "node_modules", false},
		{[]string{"node_modules"}, "node_modules", false},
		{[]string{"docs", "!docs/keep.md"}, "docs", true},
		{[]string{"a", "!a/b/*"}, "a", true},
		{[]string{"a", "!a/b/*"}, "a/b", true},
		{[]string{"a", "!a/b/*"}, "a/c", false},
		{[]string{"a", "!a/b/**"}, "a", true},
		{[]string{"a", "!a/b/**"}, "a/c", false},
		{[]string{"a", "!/a/b/"}, "a", true},
		{[]string{"a", "!ab"}, "a", false},
		{[]string{"a", "!*.md"}, "a", true},
		{[]string{"a", "!a/[bc]"}, "a/d", true},
	}
	for _, tc := range tests {
		files := map[string]string{".dockerignore": strings.Join(tc.patterns, "\n") + "\n", tc.dir + "/f": "f"}
		root := filepath.Dir(write(t, files))
		ctx, err := openContext(root, filepath.Join(root, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		if got := ctx.ignore.mayTakeBack(tc.dir); got != tc.want {
			t.Errorf("%q: mayTakeBack(%s) = %v, want %v", tc.patterns, tc.dir, got, tc.want)
		}
		f := newFilter(ctx, ctx.dir, nil, nil)
		w, err := f.walk(ctx.dir)
		if err != nil {
			t.Fatal(err)
		}
		// The walk reaches dir through its parents, each kept or not.
		var out, skipDir bool
		parts := strings.Split(tc.dir, "/")
		for i := range parts {
			p := filepath.Join(ctx.dir, filepath.FromSlash(strings.Join(parts[:i+1], "/")))
			if out, skipDir, err = w.visit(p, parts[i], true); err != nil {
				t.Fatal(err)
			}
		}
		if !out || skipDir == tc.want {
			t.Errorf("%q: visit(%s) left out %v, skip what is in it %v; want left out, skipped %v", tc.patterns, tc.dir, out, skipDir, !tc.want)
		}
	}
}

// A pattern is asked of a path as BuildKit asks it though it holds bytes
// patternmatcher leaves unescaped in its regular expression: '|' makes
// "*.log|*.tmp" match a.tmp, and "{2}" makes "*x{2}" match axx, where
// the test that the path holds the pattern's text between wildcards
// ("|*.tmp", "x{2}") said they could not match.
func TestPatternWithAlternationOrRepetition(t *testing.T) {
	for _, tc := range []struct{ pattern, rel string }{
		{"*.log|*.tmp", "a.tmp"},
		{"*x{2}", "axx"},
		{"*x{1,}?", "axxxy"},
	} {
		ps, err := newPatterns([]string{tc.pattern})
		if err != nil {
			t.Fatal(err)
		}
		if !buildkitMatch(t, ps.pm, tc.rel) {
			t.Fatalf("%q: BuildKit does not match %q", tc.pattern, tc.rel)
		}
		if m, _, err := ps.match(tc.rel); err != nil || !m {
			t.Errorf("%q: %q is matched %v, %v; BuildKit matches it", tc.pattern, tc.rel, m, err)
		}
	}
}

// Whether a "!" pattern may take back something in a directory left out
// is found in one search of the exceptions, sorted, where each was tried,
// joined with a separator, an allocation each when long: 20,000 of them
// over 10,000 directories left out took 2.7 s. The answers are those of
// trying each.
func TestMayTakeBackSearched(t *testing.T) {
	list := []string{"*"}
	for i := range 20000 {
		list = append(list, fmt.Sprintf("!keep/a-directory-with-a-long-name/f%d", i))
	}
	ps, err := newPatterns(list)
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(10, func() { ps.mayTakeBack("dir1") }); allocs > 2 {
		t.Errorf("%v allocations to ask %d exceptions of one directory", allocs, len(list)-1)
	}

	r := rand.New(rand.NewPCG(4, 153))
	pieces := []string{"a", "ab", "a.b", "b", "a-", "a0", "é"}
	rel := func() string {
		parts := make([]string, 1+r.IntN(3))
		for i := range parts {
			parts[i] = pieces[r.IntN(len(pieces))]
		}
		return strings.Join(parts, "/")
	}
	for range 200 {
		list := []string{"*"}
		for range 1 + r.IntN(8) {
			list = append(list, "!"+rel()+[]string{"", "/*", "/**", "/"}[r.IntN(4)])
		}
		ps, err := newPatterns(list)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			dir := rel()
			want := false
			for _, p := range list[1:] {
				e := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(p[1:], "/"), "/**"), "/*")
				want = want || strings.HasPrefix(e+"/", dir+"/")
			}
			if got := ps.mayTakeBack(dir); got != want {
				t.Fatalf("patterns %q, directory %q: may take back %v, trying each says %v", list, dir, got, want)
			}
		}
	}
}
