package dockerfile

import (
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
