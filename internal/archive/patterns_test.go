package archive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// oraclePatternSet is patternSet as it was before globs were filed by
// their literal prefix: every glob matched against every name. The
// randomized test holds the filed one to its results.
type oraclePatternSet struct {
	all     []string
	literal map[string][]int
	globs   []int
}

func newOraclePatternSet(clean []string) oraclePatternSet {
	s := oraclePatternSet{all: clean, literal: map[string][]int{}}
	for i, p := range clean {
		if strings.ContainsAny(p, `*?[\`) {
			s.globs = append(s.globs, i)
			continue
		}
		s.literal[p] = append(s.literal[p], i)
	}
	return s
}

func (s *oraclePatternSet) matches(name string) []int {
	var out []int
	for n := name; ; {
		out = append(out, s.literal[n]...)
		j := strings.LastIndexByte(n, '/')
		if j < 0 {
			break
		}
		n = n[:j]
	}
	for _, i := range s.globs {
		if matchBelow(s.all[i], name) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

var nameOf = regexp.MustCompile(`\\.|[*?[\]\\]`)

// Globs filed by their literal prefix match what matching every glob
// against every name matched: the same patterns credited for each name
// (what "matched nothing" reports), the same answer from any, on random
// patterns and names drawn from a few overlapping pieces so that they
// often share prefixes, escapes (of a wildcard, a plain byte, a byte of
// a rune), classes that take '/' or ']', ancestors, case, runes and
// bytes that are no UTF-8.
func TestPatternSetAsEveryGlob(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 147))
	pieces := []string{"a", "A", "b", "ab", "f1", "f12", "f2", "bin", "x.so", ".", "..", "-", `\`, "*", "[", "]", "é", "\xff", "|"}
	wild := []string{"*", "?", "[ab]", "[/]", "[^a]", "[!f]", "[a-f]", `\*`, `\a`, `\[`, `\]`, `\?`, `\\`, `\é`, "[]a]", "[é]", "**", "f*", "*1", "a?b", "[.-0]"}
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
	joined := func(wildcards bool) string {
		parts := make([]string, 1+r.IntN(4))
		for i := range parts {
			parts[i] = component(wildcards)
		}
		return strings.Join(parts, "/")
	}
	for round := range 300 {
		var raw []string
		for range 1 + r.IntN(40) {
			p := joined(r.IntN(4) != 0)
			// Cleaning can break a class that holds '/' ("[/]/.."):
			// Extract refuses what then fails to parse.
			if _, err := cleanPatterns([]string{p}); err == nil {
				raw = append(raw, p)
			}
		}
		clean, err := cleanPatterns(raw)
		if err != nil {
			t.Fatal(err)
		}
		s := newPatternSet(clean)
		o := newOraclePatternSet(clean)
		for range 200 {
			name := path.Clean(joined(false))
			if r.IntN(4) == 0 && len(clean) > 0 {
				// A name one of the patterns was made from, so that
				// literal ones and their subtrees are hit too.
				// Its wildcards made plain, its escapes dropped or read.
				keep := r.IntN(2) == 0
				p := nameOf.ReplaceAllStringFunc(clean[r.IntN(len(clean))], func(m string) string {
					switch {
					case keep && m[0] == '\\':
						return m[1:]
					case m == "*":
						return "x"
					case m == "?":
						return "y"
					}
					return ""
				})
				name = path.Clean(p + "/" + component(false))
			}
			var got []int
			s.matches(name, func(i int) bool { got = append(got, i); return true })
			slices.Sort(got)
			want := o.matches(name)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: patterns %q, name %q: credited %v, matching every glob credits %v", round, clean, name, got, want)
			}
			if s.any(name) != (len(want) > 0) {
				t.Fatalf("round %d: patterns %q, name %q: any = %v", round, clean, name, s.any(name))
			}
		}
	}
}

// A name is matched only against the globs that begin as it does: 5,000
// globs bin/f0*, bin/f1*, ... over as many entries cost 5,000 matches
// each, 5e7 in all, and 20,000 over 100,000 entries held a build for
// ten minutes. bin/f4321 is matched against bin/f4*, bin/f43*, bin/f432*
// and bin/f4321*, each over its two components at most.
func TestIncludeGlobsFiledByPrefix(t *testing.T) {
	const n = 5000
	var ents []ent
	var include []string
	for i := range n {
		ents = append(ents, ent{name: fmt.Sprintf("bin/f%d", i), body: "x"})
		include = append(include, fmt.Sprintf("bin/f%d*", i))
	}
	ents = append(ents, ent{name: "lib/other", body: "x"})
	calls := 0
	defer func(m func(string, string) (bool, error)) { match = m }(match)
	match = func(p, n string) (bool, error) { calls++; return path.Match(p, n) }

	s := newSandbox(t, Tar, tarBytes(t, ents))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{Include: include}); err != nil {
		t.Fatal(err)
	}
	// At most 4 globs begin as a name does, each matched over at most two
	// components, once for whether the entry is placed and once for the
	// patterns it credits.
	if limit := 2 * 4 * 2 * len(ents); calls > limit {
		t.Errorf("%d matches for %d entries and %d globs, over %d", calls, len(ents), n, limit)
	}
	if _, err := os.Stat(filepath.Join(s.out, "bin/f4999")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(s.out, "lib/other")); err == nil {
		t.Error("lib/other was extracted, though no pattern matches it")
	}

	calls = 0
	p, err := NewPatterns(include)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if got := p.Match(e.name); got != (e.name != "lib/other") {
			t.Errorf("Patterns.Match(%q) = %v", e.name, got)
		}
	}
	if limit := 4 * 2 * len(ents); calls > limit {
		t.Errorf("Patterns.Match: %d matches for %d names and %d globs, over %d", calls, len(ents), n, limit)
	}
}

// Globs that one name would be matched against one by one are refused
// past MaxGlobsPerName, naming the one that makes one too many: those
// beginning with a wildcard, and those whose text before the first
// wildcard begins another's (b*, bin/*), count together; those that no
// name can both begin with (a*, b*) do not.
func TestIncludeGlobsBounded(t *testing.T) {
	globs := func(n int, format string) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	const max = MaxGlobsPerName
	for _, tc := range []struct {
		name    string
		include []string
		at      int // -1: taken
		want    string
	}{
		{"wildcard first, at the bound", globs(max, "*x%d"), -1, ""},
		{"wildcard first, past it", append(append(globs(max, "*x%d"), "lib", "bin/f"), "?y"), max + 2, `include pattern "?y" makes 1001 that begin with a wildcard`},
		{"names are looked up", append(globs(max, "[ab]%d"), globs(5*max, "bin/f%d")...), -1, ""},
		{"apart", append(globs(max-1, "a%d*"), globs(max-1, "b%d?")...), -1, ""},
		{"nested", append(append(globs(max/2, "b*%d"), globs(max/2, "bin/*%d")...), "./bin/l*"), max, `include pattern "./bin/l*" makes 1001 with wildcards that a name beginning "bin/l" is matched against`},
		{"nested, first past the bound named", append(globs(max, "bin/*%d"), "*"), max, `include pattern "*" makes 1001 with wildcards that a name beginning "bin/" is matched against`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, err := CheckInclude(tc.include)
			if tc.at < 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := NewPatterns(tc.include); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || at != tc.at || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %d, %v; want %d, %s", at, err, tc.at, tc.want)
			}
			if _, err := NewPatterns(tc.include); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewPatterns: %v", err)
			}
			s := newSandbox(t, Tar, tarBytes(t, []ent{{name: "bin/f", body: "x"}}))
			if err := Extract(context.Background(), s.src, Tar, s.out, Options{Include: tc.include}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Extract: %v", err)
			}
		})
	}
	if at, err := CheckInclude([]string{"a", "b[", "c"}); at != 1 || err == nil {
		t.Errorf("a malformed pattern: %d, %v", at, err)
	}
}

// Patterns that matched nothing are listed up to 20 (maxMissing), in the
// order given, and the rest counted: 100,000 of them made an error line
// of megabytes.
func TestUnmatchedPatternsListedBounded(t *testing.T) {
	const n, listed = 100_000, 20
	include := []string{"bin/tool"}
	for i := range n {
		include = append(include, fmt.Sprintf("nope/f%d", i))
	}
	s := newSandbox(t, Tar, tarBytes(t, []ent{{name: "bin/tool", body: "x"}}))
	err := Extract(context.Background(), s.src, Tar, s.out, Options{Include: include})
	if !errors.Is(err, ErrUnmatched) {
		t.Fatalf("got %v, want ErrUnmatched", err)
	}
	msg := err.Error()
	if want := `: "nope/f0", "nope/f1", `; !strings.Contains(msg, want) {
		t.Errorf("%q does not begin the list with %s", msg, want)
	}
	if want := fmt.Sprintf(`"nope/f%d", and %d more (of %d patterns); the archive's names: "bin/tool"`, listed-1, n-listed, n+1); !strings.Contains(msg, want) {
		t.Errorf("%q does not say %s", msg, want)
	}
	if strings.Contains(msg, fmt.Sprintf(`"nope/f%d"`, listed)) || len(msg) > 2000 {
		t.Errorf("%d bytes, listing past the first %d: %.3000s", len(msg), listed, msg)
	}
}

// Names holding '[' (app/[id]/page.js, as Next.js writes them), which an
// include must escape (app/\[id]/page.js), are looked up as names: 2,000
// of them under app/ are neither refused as more globs than
// MaxGlobsPerName one name is tried on, nor matched one by one.
func TestIncludeOfEscapedNamesLookedUp(t *testing.T) {
	const n = 2 * MaxGlobsPerName
	var ents []ent
	var include []string
	for i := range n {
		ents = append(ents, ent{name: fmt.Sprintf("app/[id%d]/page.js", i), body: "x"})
		include = append(include, fmt.Sprintf(`app/\[id%d]`, i))
	}
	ents = append(ents, ent{name: "app/[id]x/page.js", body: "x"}, ent{name: "app/*/page.js", body: "x"})
	include = append(include, `./app/\*/page.js`)
	if _, err := CheckInclude(include); err != nil {
		t.Fatal(err)
	}
	calls := 0
	defer func(m func(string, string) (bool, error)) { match = m }(match)
	match = func(p, n string) (bool, error) { calls++; return path.Match(p, n) }

	s := newSandbox(t, Tar, tarBytes(t, ents))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{Include: include}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"app/[id0]/page.js", fmt.Sprintf("app/[id%d]/page.js", n-1), "app/*/page.js"} {
		if _, err := os.Stat(filepath.Join(s.out, name)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.out, "app/[id]x")); err == nil {
		t.Error("app/[id]x was extracted, though no pattern names it")
	}
	if calls > 0 {
		t.Errorf("%d matches for names without wildcards", calls)
	}
	p, err := NewPatterns(include)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match("app/[id7]/page.js") || p.Match("app/[id]x/page.js") || p.Match("app/x/page.js") {
		t.Error("Patterns.Match does not match the escaped names alone")
	}
}

// Of two sets of globs each past MaxGlobsPerName, the one named is the
// pattern that first makes one too many in the order given, so that the
// error is at the earliest recipe line at fault: the set whose prefix
// sorts first was named, a later line.
func TestIncludeGlobsBoundedFirstInOrder(t *testing.T) {
	var include []string
	for i := range MaxGlobsPerName + 1 {
		include = append(include, fmt.Sprintf("b/*%d", i))
	}
	for i := range MaxGlobsPerName + 1 {
		include = append(include, fmt.Sprintf("a/*%d", i))
	}
	at, err := CheckInclude(include)
	if want := fmt.Sprintf(`include pattern "b/*%d" makes %d with wildcards that a name beginning "b/" is matched against`, MaxGlobsPerName, MaxGlobsPerName+1); at != MaxGlobsPerName || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %d, %v; want %d, %s", at, err, MaxGlobsPerName, want)
	}
}

// A name is walked once for the globs whose text before their first
// wildcard it begins with, however many lengths those texts have: looked
// up at each length, 1,000 lengths cost every name 1,000 lookups, 2.4 s
// over 100,000 entries. Matching against globs of 1,000 lengths takes
// about as long as against as many of one length.
func TestIncludeGlobsOfManyLengthsLinear(t *testing.T) {
	const globs, names = 1000, 100_000
	var lengths, one []string
	for i := range globs {
		lengths = append(lengths, strings.Repeat("a", i)+"b*")
		one = append(one, fmt.Sprintf("q%04d*", i))
	}
	name := "x/" + strings.Repeat("y", 1200)
	match := func(include []string) time.Duration {
		t.Helper()
		p, err := NewPatterns(include)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range names {
			if p.Match(name) {
				t.Fatalf("%q matched", name)
			}
		}
		return time.Since(start)
	}
	base := match(one)
	took := match(lengths)
	if took > 2*base+time.Second {
		t.Errorf("%d names against globs of %d lengths took %s, against as many of one length %s", names, globs, took.Round(time.Millisecond), base.Round(time.Millisecond))
	}
}

// Extra patterns are matched against every name as Include's are, so
// their globs count with Include's against MaxGlobsPerName, Extra's
// first: the include pattern named is the first that makes one too many.
// Apart, those no name can begin as both do not count together.
func TestExtraGlobsBoundedWithInclude(t *testing.T) {
	const extra = 10
	var extras, include, nested []string
	for i := range extra {
		extras = append(extras, fmt.Sprintf("?e%d", i))
	}
	for i := range MaxGlobsPerName {
		include = append(include, fmt.Sprintf("*x%d", i))
		nested = append(nested, fmt.Sprintf("b/*%d", i))
	}
	s := newSandbox(t, Tar, tarBytes(t, []ent{{name: "x", body: "x"}}))
	err := Extract(context.Background(), s.src, Tar, s.out, Options{Include: include, Extra: extras})
	want := fmt.Sprintf(`include pattern "*x%d" with the %d extra patterns with wildcards that select entries besides makes %d that begin with a wildcard`, MaxGlobsPerName-extra, extra, MaxGlobsPerName+1)
	if !errors.Is(err, ErrTooManyGlobs) || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
	if _, err := os.Stat(filepath.Join(s.out, "x")); err == nil {
		t.Error("x extracted though the patterns were refused")
	}

	// b/ globs and extras under a/ never meet; b/ ones and ? ones do.
	for _, tc := range []struct {
		extras []string
		past   bool
	}{{[]string{"a/?1", "a/*2"}, false}, {[]string{"?"}, true}} {
		p, err := NewPatterns(nested)
		if err != nil {
			t.Fatal(err)
		}
		err = checkExtra(p, newPatternSet(tc.extras))
		if past := errors.Is(err, ErrTooManyGlobs); past != tc.past {
			t.Errorf("extras %q: %v", tc.extras, err)
		}
	}
}

// Patterns prepared by NewPatterns are taken as they are, and named in
// the error of those that matched nothing; given with Include too, they
// are refused.
func TestExtractOfPreparedPatterns(t *testing.T) {
	p, err := NewPatterns([]string{"./a", "nothing*"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Tar, tarBytes(t, []ent{{name: "a", body: "x"}}))
	err = Extract(context.Background(), s.src, Tar, s.out, Options{Patterns: p})
	if !errors.Is(err, ErrUnmatched) || !strings.Contains(err.Error(), `"nothing*"`) || strings.Contains(err.Error(), `"./a"`) {
		t.Errorf("got %v, want nothing* unmatched", err)
	}
	s = newSandbox(t, Tar, tarBytes(t, []ent{{name: "a", body: "x"}}))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{Patterns: p, Include: []string{"a"}}); err == nil || !strings.Contains(err.Error(), "both Include and Patterns") {
		t.Errorf("got %v", err)
	}
}
