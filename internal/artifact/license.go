package artifact

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/pallet-dev/pallet/internal/tree"
)

// licenseWords are the names licence and notice files go by; a file is one
// when its name is a word, in any case, alone or followed by '.', '_' or
// '-' and anything ("LICENSE", "licence.txt", "NOTICE-APACHE",
// "COPYRIGHT"), at the root of an artifact or one directory down. This is
// the one definition: findLicenses matches names with it, and extraction
// with an include filter keeps the same files through licensePatterns.
var licenseWords = []string{"license", "licence", "copying", "notice", "copyright"}

// licenseDepth is how many directories down licence files are looked for.
const licenseDepth = 1

// IsLicenseName reports whether a file's base name names a licence.
func IsLicenseName(base string) bool {
	lower := strings.ToLower(base)
	for _, w := range licenseWords {
		rest, ok := strings.CutPrefix(lower, w)
		if ok && (rest == "" || strings.ContainsRune("._-", rune(rest[0]))) {
			return true
		}
	}
	return false
}

// isLicensePath is IsLicenseName at a depth licences are looked for.
func isLicensePath(p string) bool {
	return strings.Count(p, "/") <= licenseDepth && IsLicenseName(path.Base(p))
}

// licensePatterns are glob patterns selecting exactly what isLicensePath
// accepts (globs have no case-insensitive form, so each letter is a
// class), plus the licence files a recipe names.
func licensePatterns(named []string) []string {
	var out []string
	for _, w := range licenseWords {
		var b strings.Builder
		for _, c := range w {
			fmt.Fprintf(&b, "[%c%c]", unicode.ToLower(c), unicode.ToUpper(c))
		}
		word := b.String()
		prefix := ""
		for d := 0; d <= licenseDepth; d++ {
			out = append(out, prefix+word, prefix+word+`[._\-]*`)
			prefix += "*/"
		}
	}
	return append(out, named...)
}

// findLicenses returns the licence files of t: the named ones (each must
// exist), or those found by name near the root.
func findLicenses(t *tree.Tree, names []string, none bool) (*tree.Tree, error) {
	out := tree.New()
	if none {
		return out, nil
	}
	if len(names) > 0 {
		for _, n := range names {
			p, err := tree.CleanPath(n)
			if err != nil {
				return nil, fmt.Errorf("licence %q: %w", n, err)
			}
			e, ok := t.Get(p)
			if !ok || e.Kind != tree.File {
				return nil, fmt.Errorf("licence file %s not found in the artifact", n)
			}
			if err := out.Add(*e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, e := range t.Entries() {
		if e.Kind != tree.File || !isLicensePath(e.Path) {
			continue
		}
		le := e
		le.Mode = 0o644
		if err := out.Add(le); err != nil {
			return nil, err
		}
	}
	return out, nil
}
