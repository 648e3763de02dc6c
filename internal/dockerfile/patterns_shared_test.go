package dockerfile

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// One set of patterns serves every source of a COPY and every artifact
// an ignore file filters, whose walks run at once when the build
// produces them: none of them may compile a pattern the others read
// (patternmatcher compiles on first match). Run with -race.
func TestPatternsSharedByConcurrentWalks(t *testing.T) {
	for _, list := range [][]string{
		{"*.md", "build/**", "!build/keep*", "docs/*/x?"},
		// One pattern that is not the same alone ("!!a"): the set is
		// asked as one matcher.
		{"*.md", "!!a", "src/*.o"},
	} {
		ps, err := newPatterns(list)
		if err != nil {
			t.Fatal(err)
		}
		paths := []string{"README.md", "build/keep1", "build/out", "docs/a/x1", "src/m.o", "!a", "other"}
		want := make([]bool, len(paths))
		var wg sync.WaitGroup
		got := make([][]bool, 4)
		for g := range got {
			got[g] = make([]bool, len(paths))
			wg.Go(func() {
				for i, p := range paths {
					got[g][i], _, _ = ps.match(p)
				}
			})
		}
		wg.Wait()
		fresh, err := newPatterns(list)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range paths {
			want[i], _, _ = fresh.match(p)
		}
		for g := range got {
			for i := range paths {
				if got[g][i] != want[i] {
					t.Errorf("%q: walk %d matched %s %v, alone %v", list, g, paths[i], got[g][i], want[i])
				}
			}
		}
	}
}

// A COPY's --exclude patterns are compiled once, when the instruction is
// checked, and that set filters each of its sources, where each source
// compiled them again; every source still leaves out what they match
// (at its top: "*" does not cross a "/").
func TestExcludeCompiledOncePerCopy(t *testing.T) {
	d, err := Load(write(t, map[string]string{
		"Dockerfile": "FROM scratch\nCOPY --exclude=*.md a b c/x.txt c/y.md /dst/\n",
		"a/1.txt":    "1", "a/R.md": "r", "a/sub/S.md": "s",
		"b/2.txt": "2", "b/R.md": "r",
		"c/x.txt": "x", "c/y.md": "y",
	}))
	if err != nil {
		t.Fatal(err)
	}
	before := compiles.Load()
	p, err := d.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := compiles.Load() - before; n != 1 {
		t.Errorf("planning compiled %d sets of patterns, want the --exclude's once", n)
	}
	var sets []*patterns
	var kept []string
	for _, a := range p.Artifacts {
		k, ok := a.Kind.(*localDir)
		if !ok {
			continue
		}
		sets = append(sets, k.filter.exclude)
		entries, _, err := scan(k.Path, k.filter)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			kept = append(kept, filepath.Base(k.Path)+"/"+en.rel)
		}
	}
	if len(sets) != 2 || sets[0] == nil || sets[0] != sets[1] {
		t.Errorf("the directories' filters hold %v, want the one set of the COPY", sets)
	}
	slices.Sort(kept)
	if want := []string{"a/1.txt", "a/sub", "a/sub/S.md", "b/2.txt"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if got := placements(t, p); len(got) != 1 || !strings.Contains(got[0], "c/x.txt") || strings.Contains(got[0], "y.md") {
		t.Errorf("placements %q, want c/x.txt and not c/y.md", got)
	}
}
