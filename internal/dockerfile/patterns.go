package dockerfile

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/moby/patternmatcher"

	"github.com/pallet-dev/pallet/internal/globindex"
)

// patterns is an ignore file's or a COPY --exclude's patterns, asked as
// BuildKit asks them: its walk of the context (fsutil's filter) and its
// copier (fsutil's copy, for --exclude) match an entry from what its
// directory's match found (MatchesUsingParentResults), which costs an
// entry one match per pattern where MatchesOrParentMatches matched it
// again through each of its parents: 1000 patterns and 20,000 files took
// seconds.
//
// The answers are BuildKit's, and they are not always
// MatchesOrParentMatches's: a pattern that was not tried on a directory
// (it could not change the directory's answer) is not known to have
// matched it when the directory's entries are matched. With "a/x" then
// "!a", a/x is left out (BuildKit) where MatchesOrParentMatches keeps it.
type patterns struct {
	pm *patternmatcher.PatternMatcher
	// pmMu is held while pm is asked: it compiles a pattern on its
	// first match, and one set is asked by walks that run at once (the
	// sources of a COPY, the artifacts an ignore file filters). each is
	// compiled before it is asked, and asked without it. A copy of the
	// set shares pm, and so the lock.
	pmMu *sync.Mutex
	// each holds the patterns one by one, to be asked in
	// MatchesUsingParentResults's order by pallet (next) with a test
	// before each that costs less than the match; nil when a pattern
	// cannot be asked alone, and pm is asked.
	each []pattern
	// exceptions holds the "!" patterns, each without a trailing "/*" or
	// "/**" and with a separator after it, sorted, when none has another
	// wildcard (wild is false): a directory left out can then hold a path
	// taken back only if one of them names a path inside it, as fsutil
	// decides to skip one. Sorted, those that begin with a directory's
	// path are found in one search, where each was tried: 20,000 of them
	// over 10,000 directories left out took 2.7 s.
	exceptions []string
	wild       bool
	// bad holds, by index, the patterns that cannot compile (nil when
	// none can fail), to be said when a match asks one.
	bad []*badPattern
	// filed holds each's indexes by the literal prefix of their pattern
	// (literalPrefix): a path is asked only the patterns it begins as,
	// and those its directory matched, where asking all of them, each a
	// substring test at least, made 20,000 patterns bin/f1*, bin/f2*,
	// ... over 100,000 files 2e9 tests, some 46 s.
	filed *globindex.Index
}

// pattern is one pattern of a set, alone.
type pattern struct {
	exclusion bool
	// alone is the pattern as the only one of a matcher, without its
	// "!": what patternmatcher's unexported Pattern.match says of a path
	// is then what alone's MatchesUsingParentResult says of it.
	alone *patternmatcher.PatternMatcher
	// literals are parts of the pattern a path it matches holds as
	// they are (the runs between its "*" and "?"); none when that is not
	// known (a class, an escape, an exact, prefix or suffix pattern,
	// which are cheap to match anyway).
	literals []string
}

// dirMatch is what the patterns found for a directory, which its
// entries are matched from; the zero dirMatch is nothing found, as for
// the top.
type dirMatch struct {
	info patternmatcher.MatchInfo // when pm was asked
	hits []int                    // when each was: the patterns that matched, ascending
}

// compiles counts the sets of patterns made, for the tests that check a
// COPY's --exclude is compiled once for all of its sources.
var compiles atomic.Int64

func newPatterns(list []string) (*patterns, error) {
	compiles.Add(1)
	pm, ones, bad, err := compiled(list)
	if err != nil {
		return nil, err
	}
	ps := &patterns{pm: pm, pmMu: new(sync.Mutex), bad: bad}
	// fsutil's set: on Windows, \ is the separator and no escape.
	wildcards := "*[]?^"
	if filepath.Separator != '\\' {
		wildcards += `\`
	}
	for _, p := range pm.Patterns() {
		if !p.Exclusion() {
			continue
		}
		s := strings.TrimSuffix(p.String(), string(filepath.Separator)+"**")
		s = strings.TrimSuffix(s, string(filepath.Separator)+"*")
		if strings.ContainsAny(s, wildcards) {
			ps.wild = true
		}
		ps.exceptions = append(ps.exceptions, s+string(filepath.Separator))
	}
	slices.Sort(ps.exceptions)
	ps.each, err = alone(pm, ones)
	if err != nil {
		return nil, err
	}
	var filed globindex.Builder
	for i, p := range pm.Patterns() {
		prefix := literalPrefix(p.String())
		if bad != nil && bad[i] != nil {
			// Asked as before, to fail where it failed.
			prefix = ""
		}
		filed.Add(prefix, i)
	}
	ps.filed = filed.Index()
	if i, prefix, crowded := ps.filed.Crowded(maxPatternsPerPath); crowded {
		return nil, &patternError{i: listIndex(list, i), err: crowdedErr(pm.Patterns()[i], prefix)}
	}
	return ps, nil
}

// maxPatternsPerPath is the most patterns of an ignore file or a COPY
// --exclude that one path may be asked: those that begin as it does up
// to their first wildcard (names, all of their text), every one for
// those that begin with one.
// BuildKit takes any number, but 150,000 lines *x1, *x2, ... over
// 100,000 files took minutes; real ignore files have dozens, and a
// generated one lists paths, which are asked only of their own.
const maxPatternsPerPath = 1000

// crowdedErr says that p makes one too many of the patterns a path
// beginning prefix is asked: those whose text before their first
// wildcard begins the path, or all of their text for those without one
// (literalPrefix).
func crowdedErr(p *patternmatcher.Pattern, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("pattern %q makes %d that begin with a wildcard (or are asked of every path for a '|', '{', '^' or escape in them); at most %d are allowed, as every path of the context is matched against each of them: begin patterns with more of the path (build/*.o, not *.o)", patternText(p), maxPatternsPerPath+1, maxPatternsPerPath)
	}
	return fmt.Errorf("pattern %q makes %d that a path beginning %q is matched against, those whose text before their first wildcard (all of it, for a name without one) begins that path; at most %d are allowed, as every such path of the context is matched against each of them: begin patterns with more of the path", patternText(p), maxPatternsPerPath+1, prefix, maxPatternsPerPath)
}

// patternText is p as written, with its "!".
func patternText(p *patternmatcher.Pattern) string {
	if p.Exclusion() {
		return "!" + p.String()
	}
	return p.String()
}

// patternError is a pattern refused before any path is asked, by its
// index in the list given, for the line of the ignore file it is at
// (patternLines) or the --exclude flag that gave it.
type patternError struct {
	i   int
	err error
}

// listIndex is the index in list of the matcher's pattern i:
// patternmatcher.New leaves out the blank ones.
func listIndex(list []string, i int) int {
	for j, p := range list {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if i == 0 {
			return j
		}
		i--
	}
	return len(list)
}

func (e *patternError) Error() string { return e.err.Error() }
func (e *patternError) Unwrap() error { return e.err }

// literalPrefix is the text every path p matches begins with, as
// patternmatcher matches p on this host (literalPrefixSep).
func literalPrefix(p string) string {
	return literalPrefixSep(p, filepath.Separator)
}

// literalPrefixSep is literalPrefix where sep is the separator p was
// cleaned with. When sep is '\', as on Windows, a '\' is the separator
// and stands for itself, where elsewhere it escapes the rune after it:
// patternmatcher follows filepath.Match, which has no escape there.
//
// A pattern without "*", "?", a class or an escape is matched as its
// text (a path equal to it, or beginning with it when it ends in "**"),
// so that text is the prefix, whatever bytes it holds. Any other is
// matched by the regular expression patternmatcher makes of it, and
// its prefix runs up to the first wildcard or class, or to a rune there
// that may stand for more or other than itself:
//   - '^', and '|' anywhere: patternmatcher escapes '.', '+', '(', ')'
//     and '$', but its table of bytes to escape has no room past '?', so
//     '|', '{' and '}' are left as they are, and a '|' makes an
//     alternation whose other side is not anchored at the start
//     ("build/*|dist/*" matches src/dist/x): p then has none;
//   - '{', a repetition of the rune before it, which may be none
//     ("logs/a{0}x*" matches logs/xy): the prefix ends before that rune;
//   - U+FFFD, which the expression matches for any byte that is no
//     UTF-8 ("a\uFFFD*" matches "a\xff"), and a U+FEFF that p begins
//     with, which patternmatcher's scanner drops as a byte order mark;
//   - an escape of a letter, a digit or a multibyte rune (a class, a
//     code, or no escape at all); one of other ASCII stands for the byte
//     it escapes, which is then in the prefix ("a\*b*" begins "a*b").
//
// Other multibyte runes stand for themselves (invalid UTF-8 and NUL are
// refused before): "données/*.txt" begins "données/".
func literalPrefixSep(p string, sep byte) string {
	special := "*?[]"
	if sep != '\\' {
		special += `\`
	}
	if rest, _ := strings.CutSuffix(p, "**"); !strings.ContainsAny(rest, special) {
		return rest
	}
	if strings.IndexByte(p, '|') >= 0 || strings.HasPrefix(p, "\uFEFF") {
		return ""
	}
	var out []byte
	last := 0 // where in out the rune last added begins
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '{':
			return string(out[:last])
		case c == 0 || strings.IndexByte(special, c) >= 0 && c != '\\' || strings.IndexByte("^}", c) >= 0:
			return string(out)
		case c == '\\' && sep != '\\':
			if i+1 == len(p) || !escapesItself(p[i+1]) {
				return string(out)
			}
			last = len(out)
			out = append(out, p[i+1])
			i += 2
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(p[i:])
			if r == utf8.RuneError {
				return string(out)
			}
			last = len(out)
			out = append(out, p[i:i+n]...)
			i += n
		default:
			last = len(out)
			out = append(out, c)
			i++
		}
	}
	return string(out)
}

// escapesItself says whether a regular expression reads '\' before c as
// c itself: Go's does for ASCII that is neither a letter nor a digit.
func escapesItself(c byte) bool {
	return c < utf8.RuneSelf && !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z')
}

// candidate is a pattern a path is asked, and whether the path's
// directory matched it.
type candidate struct {
	i      int
	parent bool
}

// candidates are the patterns rel may match, ascending: those filed
// under a prefix of rel, and those its directory matched (parent). Any
// other neither matches rel nor changes what it is found.
func (ps *patterns) candidates(rel string, parent []int) []candidate {
	var filed []int
	runs := 0
	ps.filed.Each(rel, func(ids []int) bool {
		filed = append(filed, ids...)
		runs++
		return true
	})
	if runs > 1 {
		slices.Sort(filed)
	}
	out := make([]candidate, 0, len(filed)+len(parent))
	a, b := 0, 0
	for a < len(filed) || b < len(parent) {
		switch {
		case b == len(parent) || a < len(filed) && filed[a] < parent[b]:
			out = append(out, candidate{filed[a], false})
			a++
		case a == len(filed) || parent[b] < filed[a]:
			out = append(out, candidate{parent[b], true})
			b++
		default:
			out = append(out, candidate{parent[b], true})
			a++
			b++
		}
	}
	return out
}

// compiled is patternmatcher.New(list) with each pattern's regular
// expression made now, so that a pattern that cannot compile is known by
// its index (patternmatcher makes it at the first match, and its error
// names no pattern): made in ones, each pattern alone, by index (nil
// where patternmatcher refuses it alone), for alone to keep. Such a pattern is not refused: BuildKit's walk asks
// a pattern only of some paths (an exclusion once something before it
// matched, an inclusion while nothing did), so it fails only a build
// whose walk asks it. bad holds those, by index, or is nil.
func compiled(list []string) (pm *patternmatcher.PatternMatcher, ones []*patternmatcher.PatternMatcher, bad []*badPattern, err error) {
	pm, err = patternmatcher.New(list)
	if err != nil {
		// New's error names neither the pattern nor where it is (a lone
		// "!", a class left open): the first refused alone is the one.
		for j, p := range list {
			if _, one := patternmatcher.New([]string{p}); one != nil {
				return nil, nil, nil, &patternError{i: j, err: fmt.Errorf("pattern %q: %w", strings.TrimSpace(p), one)}
			}
		}
		return nil, nil, nil, err
	}
	for i, p := range pm.Patterns() {
		// patternmatcher's scanner prints these to stderr, naming no
		// file ("<input>:1:8: invalid UTF-8 encoding"), and goes on with
		// U+FFFD, which its regular expression then matches for any
		// byte that is no UTF-8, or with a NUL, which no path holds.
		if !utf8.ValidString(p.String()) {
			return nil, nil, nil, &patternError{i: listIndex(list, i), err: fmt.Errorf("pattern %q is not valid UTF-8", patternText(p))}
		}
		if strings.IndexByte(p.String(), 0) >= 0 {
			return nil, nil, nil, &patternError{i: listIndex(list, i), err: fmt.Errorf("pattern %q holds a NUL byte", patternText(p))}
		}
	}
	for i, p := range pm.Patterns() {
		// A match skips an exclusion until something matched: each is
		// asked alone, as an inclusion.
		one, err := patternmatcher.New([]string{p.String()})
		if err == nil {
			_, err = one.MatchesOrParentMatches(".")
		}
		ones = append(ones, one)
		if err != nil {
			if bad == nil {
				bad = make([]*badPattern, len(pm.Patterns()))
			}
			bad[i] = &badPattern{text: patternText(p), err: err}
		}
	}
	return pm, ones, bad, nil
}

// badPattern is a pattern that cannot compile, said when a match asks
// it: as written, and at its line of the ignore file (0 for --exclude).
type badPattern struct {
	text string
	line int
	err  error
}

func (b *badPattern) Error() string { return fmt.Sprintf("%q: %v", b.text, b.err) }
func (b *badPattern) Unwrap() error { return b.err }

// fault is err, a match's failure at pattern i (-1 when patternmatcher
// matched them all), said as the pattern that cannot compile.
func (ps *patterns) fault(i int, err error) error {
	if i >= 0 && i < len(ps.bad) && ps.bad[i] != nil {
		return ps.bad[i]
	}
	for _, b := range ps.bad {
		if b != nil {
			return b
		}
	}
	return err
}

// alone makes pm's patterns each a matcher of its own, or returns nil
// when one is not the same pattern alone: patternmatcher.New trims and
// reads a leading "!" again, so " a" (from "! a") or "!a" (from "!!a")
// would change. The matchers are those compiled made, by index: compiled
// already, so that walks at once only read them.
func alone(pm *patternmatcher.PatternMatcher, ones []*patternmatcher.PatternMatcher) ([]pattern, error) {
	if filepath.Separator != '/' {
		return nil, nil
	}
	var each []pattern
	for i, p := range pm.Patterns() {
		one := ones[i]
		if one == nil {
			var err error
			if one, err = patternmatcher.New([]string{p.String()}); err != nil {
				return nil, err
			}
		}
		if q := one.Patterns(); len(q) != 1 || q[0].Exclusion() || q[0].String() != p.String() {
			return nil, nil
		}
		each = append(each, pattern{exclusion: p.Exclusion(), alone: one, literals: literals(p.String())})
	}
	return each, nil
}

// literals returns the runs of p between its "*" and "?", which
// patternmatcher makes a regular expression of where each character of
// them stands for itself: a path p matches holds each. It returns none
// for a pattern with a class, an escape, or a '^', '|', '{' or '}',
// which patternmatcher leaves unescaped (an alternation, a repetition:
// "*.log|*.tmp" matches a.tmp), or a U+FFFD, which the expression
// matches for any byte that is no UTF-8, or a U+FEFF it begins with,
// which patternmatcher drops (literalPrefixSep); nor for one
// patternmatcher matches without a regular expression.
func literals(p string) []string {
	if !strings.ContainsAny(p, "*?") || strings.ContainsAny(p, "[]\\^|{}\x00\uFFFD") || strings.HasPrefix(p, "\uFEFF") || !utf8.ValidString(p) {
		return nil
	}
	if rest, ok := strings.CutPrefix(p, "**"); ok && !strings.ContainsAny(rest, "*?") {
		return nil // a suffix
	}
	if rest, ok := strings.CutSuffix(p, "**"); ok && !strings.ContainsAny(rest, "*?") {
		return nil // a prefix
	}
	var out []string
	for _, run := range strings.FieldsFunc(p, func(r rune) bool { return r == '*' || r == '?' }) {
		// The separator after "**" is optional ("**/a" matches "a").
		if run = strings.TrimLeft(run, "/"); run != "" {
			out = append(out, run)
		}
	}
	return out
}

// next matches rel, an entry of the directory parent was found for (the
// zero dirMatch for an entry at the top: below it, an entry comes with
// its directory's, or the walk starts with match); what it returns for
// rel is what rel's own entries are matched from, when dir says there
// are any. rel is slash-separated.
func (ps *patterns) next(rel string, parent dirMatch, dir bool) (bool, dirMatch, error) {
	if ps.each == nil {
		ps.pmMu.Lock()
		m, info, err := ps.pm.MatchesUsingParentResults(rel, parent.info)
		ps.pmMu.Unlock()
		if err != nil {
			return false, dirMatch{}, ps.fault(-1, err)
		}
		return m, dirMatch{info: info}, nil
	}
	// MatchesUsingParentResults, pattern by pattern, of those that may
	// match.
	var hits []int
	matched := false
	for _, c := range ps.candidates(rel, parent.hits) {
		p := &ps.each[c.i]
		match := c.parent
		if !match {
			if p.exclusion != matched {
				continue
			}
			var err error
			if match, err = p.match(rel); err != nil {
				return false, dirMatch{}, ps.fault(c.i, err)
			}
		}
		if match {
			if dir {
				hits = append(hits, c.i)
			}
			matched = !p.exclusion
		}
	}
	return matched, dirMatch{hits: hits}, nil
}

// match says whether the pattern alone matches rel.
func (p *pattern) match(rel string) (bool, error) {
	for _, l := range p.literals {
		if !strings.Contains(rel, l) {
			return false, nil
		}
	}
	//lint:ignore SA1019 with one pattern and no parent matched, this is Pattern.match, which is not exported; its fault (buildx#850) is in the parents.
	return p.alone.MatchesUsingParentResult(rel, false)
}

// match matches rel as BuildKit's walk reaches it: through each directory
// above it, from the top.
func (ps *patterns) match(rel string) (bool, dirMatch, error) {
	var d dirMatch
	for i := 0; ; i++ {
		j := strings.IndexByte(rel[i:], '/')
		if j < 0 {
			return ps.next(rel, d, true)
		}
		i += j
		var err error
		if _, d, err = ps.next(rel[:i], d, true); err != nil {
			return false, d, err
		}
	}
}

// mayTakeBack says whether a "!" pattern may keep something inside the
// directory rel that the patterns leave out. When it cannot, nothing in
// it is kept: an entry is matched from its directory, so it matches what
// the directory matched, and only an exception could undo that.
func (ps *patterns) mayTakeBack(rel string) bool {
	if !ps.pm.Exclusions() {
		return false
	}
	if ps.wild {
		return true
	}
	dir := filepath.FromSlash(rel) + string(filepath.Separator)
	i, _ := slices.BinarySearch(ps.exceptions, dir)
	return i < len(ps.exceptions) && strings.HasPrefix(ps.exceptions[i], dir)
}
