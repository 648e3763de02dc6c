package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/pallet-dev/pallet/internal/tree"
)

// licenseName matches the usual names of licence and notice files.
var licenseName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|copyright)([._-].*)?$`)

// findLicenses returns the licence files of t: the named ones (each must
// exist), or those found by name at the root or one directory down.
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
		if e.Kind != tree.File || strings.Count(e.Path, "/") > 1 || !licenseName.MatchString(path.Base(e.Path)) {
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

// treeDigest is a digest of a tree's paths, kinds, modes, links and file
// contents: what "the sha256 of a local directory" means in the record.
func treeDigest(t *tree.Tree, digest func(string) (string, error)) (string, error) {
	h := sha256.New()
	for _, e := range t.Entries() {
		fmt.Fprintf(h, "%s\x00%s\x00%o\x00%s\x00", e.Path, e.Kind, e.Mode, e.Link)
		if e.Kind == tree.File {
			sum, err := digest(e.Source)
			if err != nil {
				return "", err
			}
			io.WriteString(h, sum)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
