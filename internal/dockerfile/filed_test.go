package dockerfile

import (
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
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

// Filed patterns say of each path what BuildKit's own matcher says
// (MatchesUsingParentResults, down from the top), on ignore files read
// as BuildKit reads them (comments, blank lines, a leading "/" or "./",
// a trailing "/", ".." that cleaning removes), with patterns holding what
// the regular expression patternmatcher makes may read otherwise
// ('.', '+', '(', '|', '{', '$', '^'), classes with ']' or '/' in them,
// "**" in every place, case, runes and bytes that are no UTF-8: runes of
// two, three and four bytes, escaped or not, before a wildcard or after
// one, repeated ("é{0}"), U+FFFD (which the matcher's expression matches
// for such a byte: paths made from a pattern hold 0xff for it) and U+FEFF
// (which the matcher drops where a pattern begins with it).
func TestFiledPatternsAsBuildKit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 153))
	pieces := []string{"a", "A", "b", "ab", "f1", "bin", "x.go", ".", "..", "é", "\xff", "^", "$", "+", "(", ")", "|", "{1}", "-", " ", "données", "日本", "🙂", "\uFFFD", "\uFEFF", "{0}", "é{0}"}
	wild := []string{"*", "**", "?", "[ab]", "[]a]", "[^a]", "[!a]", "[a-f]", "[/]", `\*`, `\.`, `\a`, `\(`, "**/", "/**", "[é]", "*.go", `\ `, `\{`, `\é`, `\d`, `\w`, "[日-本]", "?🙂"}
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
	asked, hit := 0, 0
	for round := 0; round < 300; {
		var file strings.Builder
		var raw []string
		for range 1 + r.IntN(30) {
			p := strings.Join(joined(r.IntN(4) != 0, 1+r.IntN(3)), "/")
			switch r.IntN(8) {
			case 0:
				p = "/" + p
			case 1:
				p = "./" + p
			case 2:
				p += "/"
			case 3:
				p = "**"
			}
			if r.IntN(3) == 0 {
				p = "!" + p
			}
			raw = append(raw, p)
			file.WriteString(p + "\n")
			if r.IntN(5) == 0 {
				file.WriteString("# " + p + "\n\n")
			}
		}
		list, err := ignorefile.ReadAll(strings.NewReader(file.String()))
		if err != nil {
			continue
		}
		ps, err := newPatterns(list)
		if err != nil || ps.each == nil || ps.bad != nil {
			continue
		}
		round++
		for range 100 {
			parts := joined(false, 1+r.IntN(4))
			if r.IntN(2) == 0 {
				// A path one of the patterns was made from.
				p := strings.TrimLeft(raw[r.IntN(len(raw))], "!/.")
				p = strings.NewReplacer("*", "x", "?", "y", "[", "", "]", "", `\d`, "1", `\w`, "_", `\`, "", "\uFFFD", "\xff").Replace(p)
				if r.IntN(2) == 0 {
					p = strings.ReplaceAll(p, "\uFEFF", "")
				}
				if r.IntN(2) == 0 {
					p = strings.ReplaceAll(p, "{0}", "")
				}
				if p = strings.Trim(path.Clean(p), "/"); p != "." && !strings.HasPrefix(p, "..") {
					parts = append(strings.Split(p, "/"), parts[:r.IntN(2)]...)
				}
			}
			var got dirMatch
			var info patternmatcher.MatchInfo
			for i := range parts {
				rel := strings.Join(parts[:i+1], "/")
				m, d, err := ps.next(rel, got, true)
				if err != nil {
					t.Fatal(err)
				}
				wm, winfo, err := ps.pm.MatchesUsingParentResults(rel, info)
				if err != nil {
					t.Fatal(err)
				}
				asked++
				if m != wm {
					t.Fatalf("ignore file %q, %q: %v, BuildKit says %v", file.String(), rel, m, wm)
				}
				if m {
					hit++
				}
				got, info = d, winfo
			}
		}
	}
	t.Logf("%d paths asked, %d matched", asked, hit)
}

// patternmatcher escapes only some of the bytes a regular expression
// reads otherwise: '|', '{' and '}' are left as they are (its table of
// them drops every byte past '?'), so "build/*|dist/*" matches dist/x
// and "logs/a{2}*" matches logs/aa.txt, as BuildKit leaves them out. A
// path is asked such a pattern though it does not begin as the pattern
// does.
func TestFiledPatternsAlternationAndRepetition(t *testing.T) {
	for _, tc := range []struct{ pattern, rel string }{
		{"build/*|dist/*", "dist/x"},
		{"build/*|dist/*", "src/dist/x"},
		{"logs/a{2}*", "logs/aa.txt"},
		{"logs/a{1,}?", "logs/aaax"},
	} {
		ps, err := newPatterns([]string{"other/*", tc.pattern})
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

// A pattern's literal prefix is the text every path it matches begins
// with, runes that are not ASCII and escaped punctuation included, as
// patternmatcher reads them: on Windows, where '\' is the separator and
// no escape, too (only the rule is tried there, as tests run on Linux).
// Where this host's separator is the rule's, BuildKit's matcher and
// pallet's match a path beginning with the prefix, among them the runes
// the matcher's regular expression reads otherwise ('{' repeats the rune
// before it, none with "{0}"; U+FFFD matches a byte that is no UTF-8; a
// leading U+FEFF is dropped).
func TestLiteralPrefixSep(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		sep     byte
		want    string
		rel     string // a path it matches, on a host with sep
	}{
		{"données/*.txt", '/', "données/", "données/a.txt"},
		{"données/f1.txt", '/', "données/f1.txt", "données/f1.txt"},
		{"données/**", '/', "données/", "données/x/y"},
		{"日本/🙂*", '/', "日本/🙂", "日本/🙂x"},
		{`données\*.txt`, '/', "données*.txt", "données*.txt"},
		{`a\*b*`, '/', "a*b", "a*bc"},
		{`a\ b*`, '/', "a b", "a bc"},
		{`a\db*`, '/', "a", "a1b"},
		{"logs/a{0}x*", '/', "logs/", "logs/xy"},
		{"é{0}x*", '/', "", "xy"},
		{`a\*{0}x*`, '/', "a", "axy"},
		{"a\uFFFD*", '/', "a", "a\xffb"},
		{"\uFEFFa*", '/', "", "ab"},
		{"\uFEFFa", '/', "\uFEFFa", "\uFEFFa"},
		{"build|dist", '/', "build|dist", "build|dist"},
		{"build/*|dist/*", '/', "", "src/dist/x"},
		{`gen\f1.txt`, '\\', `gen\f1.txt`, ""},
		{`gen\f1*`, '\\', `gen\f1`, ""},
		{`données\f1.txt`, '\\', `données\f1.txt`, ""},
		{`données\*.txt`, '\\', `données\`, ""},
		{`données\**`, '\\', `données\`, ""},
		{`a\b{0}\c*`, '\\', `a\`, ""},
		{`a\é\c?`, '\\', `a\é\c`, ""},
		{`**\x*`, '\\', "", ""},
	} {
		got := literalPrefixSep(tc.pattern, tc.sep)
		if got != tc.want {
			t.Errorf("literalPrefixSep(%q, %q) = %q, want %q", tc.pattern, tc.sep, got, tc.want)
		}
		if tc.sep != filepath.Separator || tc.rel == "" {
			continue
		}
		if !strings.HasPrefix(tc.rel, got) {
			t.Errorf("%q: %q does not begin with %q", tc.pattern, tc.rel, got)
		}
		ps, err := newPatterns([]string{"other/*", tc.pattern})
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
