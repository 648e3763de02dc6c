package dockerfile

import (
	"path/filepath"
	"strings"

	"github.com/moby/patternmatcher"
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
	// exceptions holds the "!" patterns, each without a trailing "/*" or
	// "/**", when none has another wildcard (wild is false): a directory
	// left out can then hold a path taken back only if one of them names
	// a path inside it, as fsutil decides to skip one.
	exceptions []string
	wild       bool
}

func newPatterns(list []string) (*patterns, error) {
	pm, err := patternmatcher.New(list)
	if err != nil {
		return nil, err
	}
	ps := &patterns{pm: pm}
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
		ps.exceptions = append(ps.exceptions, s)
	}
	return ps, nil
}

// next matches rel, an entry of the directory that parent was found for
// (the zero MatchInfo for an entry at the top); the MatchInfo it returns
// is what rel's own entries are matched from. rel is slash-separated.
func (ps *patterns) next(rel string, parent patternmatcher.MatchInfo) (bool, patternmatcher.MatchInfo, error) {
	return ps.pm.MatchesUsingParentResults(rel, parent)
}

// match matches rel as BuildKit's walk reaches it: through each directory
// above it, from the top.
func (ps *patterns) match(rel string) (bool, patternmatcher.MatchInfo, error) {
	var info patternmatcher.MatchInfo
	for i := 0; ; i++ {
		j := strings.IndexByte(rel[i:], '/')
		if j < 0 {
			return ps.pm.MatchesUsingParentResults(rel, info)
		}
		i += j
		var err error
		if _, info, err = ps.pm.MatchesUsingParentResults(rel[:i], info); err != nil {
			return false, info, err
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
	sep := string(filepath.Separator)
	dir := filepath.FromSlash(rel) + sep
	for _, e := range ps.exceptions {
		if strings.HasPrefix(e+sep, dir) {
			return true
		}
	}
	return false
}
