package golicenses

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/github/go-spdx/v2/spdxexp/spdxlicenses"
	classifier "github.com/google/licenseclassifier/v2"
	"github.com/google/licenseclassifier/v2/assets"
)

// defaultClassifier is loaded once per process, on first use: its corpus
// is embedded (no file or network is read) and takes about a second and
// 65 MiB to index.
var defaultClassifier = sync.OnceValues(assets.DefaultClassifier)

// classifierMu serialises matching: v2.0.0's Match is not safe for
// concurrent use (its diffing writes into slices shared with the corpus,
// as the race detector shows), and a build collects several binaries at
// once. A licence file takes milliseconds.
var classifierMu sync.Mutex

// classification is what the classifier says of one file.
type classification struct {
	spdx       string
	ids        []string
	confidence float64
}

// classify names the licences in text. Only whole licence texts and
// licence headers count; the classifier's copyright-line matches say
// nothing about the terms.
func classify(text []byte) (classification, error) {
	if cl, ok := quickClassify(text); ok {
		return cl, nil
	}
	c, err := defaultClassifier()
	if err != nil {
		return classification{}, fmt.Errorf("loading the licence classifier: %w", err)
	}
	classifierMu.Lock()
	res := c.Match(text)
	classifierMu.Unlock()
	return classificationOf(licenseMatches(res.Matches)), nil
}

// classificationOf is what the licence and header matches ms say: their
// distinct identifiers in the order found, and the least confidence.
func classificationOf(ms []*classifier.Match) classification {
	out := classification{confidence: 1}
	for _, m := range ms {
		id := spdxID(m.Name)
		if !slices.Contains(out.ids, id) {
			out.ids = append(out.ids, id)
		}
		out.confidence = min(out.confidence, m.Confidence)
	}
	if len(out.ids) == 0 {
		return classification{spdx: NoAssertion}
	}
	out.spdx = strings.Join(out.ids, " AND ")
	return out
}

// Identify names the licences of the licence texts given (an artifact's
// own LICENSE, COPYING...), as one SPDX expression: the distinct
// identifiers found, joined with AND, in a fixed order; NoAssertion when
// none is recognised. remember, when set, is Options.Remember.
func Identify(texts [][]byte, remember func(sum string, text []byte, derive func() (string, error)) (string, error)) (string, error) {
	c := &collector{opt: Options{Remember: remember}}
	var ids []string
	for _, text := range texts {
		cl, err := c.classify(text)
		if err != nil {
			return "", err
		}
		for _, id := range cl.ids {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return NoAssertion, nil
	}
	slices.Sort(ids)
	return strings.Join(ids, " AND "), nil
}

// remembered is a classification as Options.Remember keeps it.
type remembered struct {
	SPDX       string
	IDs        []string
	Confidence float64
}

// classify is classify through Options.Remember, when set: by the text's
// sha256, so that a build whose licence texts were all seen before never
// loads the classifier.
func (c *collector) classify(text []byte) (classification, error) {
	if c.opt.Remember == nil {
		return classify(text)
	}
	sum := sha256.Sum256(text)
	v, err := c.opt.Remember(hex.EncodeToString(sum[:]), text, func() (string, error) {
		cl, err := classify(text)
		if err != nil {
			return "", err
		}
		data, err := json.Marshal(remembered{cl.spdx, cl.ids, cl.confidence})
		return string(data), err
	})
	if err != nil {
		return classification{}, err
	}
	cl, ok := recalled(v)
	if !ok {
		return classify(text) // not what this version remembers: derive
	}
	return cl, nil
}

// recalled is the classification Options.Remember kept as v, if v is
// one this version wrote.
func recalled(v string) (classification, bool) {
	var r remembered
	if err := json.Unmarshal([]byte(v), &r); err != nil || r.SPDX == "" {
		return classification{}, false
	}
	return classification{spdx: r.SPDX, ids: r.IDs, confidence: r.Confidence}, true
}

// licenseMatches keeps the licence and header matches, in the order they
// appear, less any whose text lies within a better match's: the
// classifier keeps overlapping matches that end on the same line, so
// that an ISC text is also reported as the shorter 0BSD it contains.
func licenseMatches(all classifier.Matches) []*classifier.Match {
	byConfidence := slices.Clone(all)
	slices.SortStableFunc(byConfidence, func(a, b *classifier.Match) int { return cmp.Compare(b.Confidence, a.Confidence) })
	var kept []*classifier.Match
	for _, m := range byConfidence {
		if m.MatchType != "License" && m.MatchType != "Header" {
			continue
		}
		within := slices.ContainsFunc(kept, func(k *classifier.Match) bool {
			return k.StartTokenIndex <= m.StartTokenIndex && m.EndTokenIndex <= k.EndTokenIndex
		})
		if !within {
			kept = append(kept, m)
		}
	}
	slices.SortStableFunc(kept, func(a, b *classifier.Match) int { return a.StartTokenIndex - b.StartTokenIndex })
	return kept
}

// spdxAliases are the classifier's names for licences SPDX lists under
// another identifier.
var spdxAliases = map[string]string{"BSD-0-Clause": "0BSD"}

// spdxID turns a classifier corpus name into an SPDX identifier: its
// names are SPDX identifiers where SPDX lists the licence (deprecated ones
// such as GPL-2.0 included); the rest ("Apache-2.0-Modified", "tcl_tk")
// become LicenseRef-<name>, SPDX's form for licences it does not list.
func spdxID(name string) string {
	if id, ok := spdxAliases[name]; ok {
		return id
	}
	if ok, id := spdxlicenses.IsActiveLicense(name); ok {
		return id
	}
	if ok, id := spdxlicenses.IsDeprecatedLicense(name); ok {
		return id
	}
	if strings.HasPrefix(name, "LicenseRef-") {
		return name
	}
	ref := []byte(name)
	for i, c := range ref {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			ref[i] = '-'
		}
	}
	return "LicenseRef-" + string(ref)
}

// sourceOfferPrefixes are the licences (by SPDX identifier prefix) whose
// terms oblige whoever distributes the binary to make the module's source
// available: the file-level copyleft of MPL, EPL and CDDL, and the GPL
// family. go-licenses calls the first "reciprocal" and the others
// "restricted".
var sourceOfferPrefixes = []string{"MPL-", "EPL-", "CDDL-", "GPL-", "LGPL-", "AGPL-"}

func needsSourceOffer(ids []string) []string {
	var out []string
	for _, id := range ids {
		for _, p := range sourceOfferPrefixes {
			if strings.HasPrefix(id, p) && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}
