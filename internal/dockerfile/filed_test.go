package dockerfile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// oracleNext is patterns.next as it was before patterns were filed by
// their literal prefix: every pattern asked of every path, what each
// matched kept for all of them. The randomized test holds next to it.
func oracleNext(ps *patterns, rel string, parent []bool, dir bool) (bool, []bool, error) {
	var bits []bool
	if dir {
		bits = make([]bool, len(ps.each))
	}
	matched := false
	for i := range ps.each {
		p := &ps.each[i]
		match := parent != nil && parent[i]
		if !match {
			if p.exclusion != matched {
				continue
			}
			var err error
			if match, err = p.match(rel); err != nil {
				return false, nil, ps.fault(i, err)
			}
		}
		if bits != nil {
			bits[i] = match
		}
		if match {
			matched = !p.exclusion
		}
	}
	return matched, bits, nil
}

// Patterns filed by their literal prefix say of each path what asking
// every one said: whether it is matched, which patterns it passes to its
// entries, and the pattern that cannot compile where one is asked; on
// random ignore files ("!" exceptions, "**", classes, escapes, '^', runes,
// patterns that cannot compile) and walks down random paths.
func TestFiledPatternsAsEveryPattern(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 147))
	pieces := []string{"a", "b", "ab", "f1", "f12", "bin", "x.go", ".", "é", "^", "$", "+"}
	wild := []string{"*", "**", "?", "[ab]", "[^a]", "[a-f]", `\*`, `\a`, "f*", "*1", "a?b", "**/", "[é]"}
	component := func(wildcards bool) string {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			if wildcards && r.IntN(3) == 0 {
				b.WriteString(wild[r.IntN(len(wild))])
			} else {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
		}
		return b.String()
	}
	joined := func(wildcards bool, n int) []string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = component(wildcards)
		}
		return parts
	}
	asked, hit, failed := 0, 0, 0
	for round := 0; round < 300; {
		var list []string
		for range 1 + r.IntN(30) {
			p := strings.Join(joined(r.IntN(4) != 0, 1+r.IntN(3)), "/")
			if r.IntN(4) == 0 {
				p = "!" + p
			}
			if r.IntN(100) == 0 {
				p += `\m` // cannot compile
			}
			list = append(list, p)
		}
		ps, err := newPatterns(list)
		if err != nil || ps.each == nil {
			continue
		}
		round++
		for range 100 {
			parts := joined(false, 1+r.IntN(4))
			if r.IntN(3) == 0 {
				// A path one of the patterns was made from.
				p := strings.TrimPrefix(list[r.IntN(len(list))], "!")
				p = strings.NewReplacer("*", "x", "?", "y", "[", "", "]", "", `\`, "").Replace(p)
				parts = append(strings.Split(p, "/"), parts[:1]...)
			}
			var got dirMatch
			var want []bool
			for i := range parts {
				rel := strings.Join(parts[:i+1], "/")
				dir := i < len(parts)-1 || r.IntN(2) == 0
				m, d, err := ps.next(rel, got, dir)
				wm, wbits, werr := oracleNext(ps, rel, want, dir)
				asked++
				if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
					t.Fatalf("patterns %q, %q: error %v, asking every pattern gives %v", list, rel, err, werr)
				}
				if err != nil {
					failed++
					break
				}
				var whits []int
				for j, b := range wbits {
					if b {
						whits = append(whits, j)
					}
				}
				if m != wm || !slices.Equal(d.hits, whits) {
					t.Fatalf("patterns %q, %q: %v passing %v, asking every pattern gives %v passing %v", list, rel, m, d.hits, wm, whits)
				}
				if m {
					hit++
				}
				got, want = d, wbits
			}
		}
	}
	t.Logf("%d paths asked, %d matched, %d failed", asked, hit, failed)
}

// A path is asked only the patterns it begins as, and those its
// directory matched: 20,000 patterns bin/f1*, bin/f2*, ... over 100,000
// files were 2e9 tests, some 46 s. Here each of 5,000 files is asked at
// most 5 (bin/f4321 is asked bin/f4*, bin/f43*, bin/f432*, bin/f4321*
// and **/*.tmp).
func TestFiledPatternsAskedOnlyThoseThatMayMatch(t *testing.T) {
	const n = 5000
	list := []string{"**/*.tmp"}
	for i := range n {
		list = append(list, fmt.Sprintf("bin/f%d*", i))
	}
	ps, err := newPatterns(list)
	if err != nil {
		t.Fatal(err)
	}
	_, d, err := ps.match("bin")
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	for i := range n {
		rel := fmt.Sprintf("bin/f%d", i)
		c := ps.candidates(rel, d.hits)
		asked += len(c)
		if m, _, err := ps.next(rel, d, false); err != nil || !m {
			t.Fatalf("%s: %v, %v", rel, m, err)
		}
		if m, _, err := ps.next(fmt.Sprintf("bin/g%d", i), d, false); err != nil || m {
			t.Fatalf("bin/g%d: %v, %v", i, m, err)
		}
	}
	if asked > 5*n {
		t.Errorf("%d patterns asked of %d paths", asked, n)
	}
}
