package golicenses

import (
	"strings"
	"sync"

	classifier "github.com/google/licenseclassifier/v2"
	"github.com/google/licenseclassifier/v2/assets"
)

// quickCorpus is the part of the classifier's corpus that most licence
// files are a copy of, every document it holds under these names
// (licence texts, headers, supplements): loading the whole corpus costs
// about a second of CPU and 65 MiB, more than the rest of a cold build
// that ships one MIT LICENSE, while these 47 documents take a tenth of
// that. TestQuickCorpusIsWhole checks the list against the corpus.
var quickCorpus = []string{
	"Header/Apache-2.0/header.txt", "Header/Apache-2.0/nourl.txt", "Header/Apache-2.0/short.txt",
	"License/Apache-2.0/a.txt", "License/Apache-2.0/b.txt", "License/Apache-2.0/beri.txt",
	"License/Apache-2.0/no-header.txt", "License/Apache-2.0/pristine.txt",
	"Supplement/Apache-2.0/apr.txt", "Supplement/Apache-2.0/contributions.txt",
	"Supplement/Apache-2.0/openssl.txt", "Supplement/Apache-2.0/openssl_debian.txt",
	"Header/MIT/header.txt", "License/MIT/a.txt", "License/MIT/dec.txt", "License/MIT/pristine.txt",
	"License/MIT/xfig.txt", "Supplement/MIT/checker-framework.txt", "Supplement/MIT/preface-a.txt",
	"License/BSD-2-Clause/license.txt", "License/BSD-2-Clause/pristine.txt", "License/BSD-2-Clause/tcpdump.txt",
	"Supplement/BSD-2-Clause/laodict.txt", "Supplement/BSD-2-Clause/litex.txt",
	"Header/BSD-3-Clause/a.txt", "Header/BSD-3-Clause/header.txt",
	"License/BSD-3-Clause/JDOM.txt", "License/BSD-3-Clause/a.txt", "License/BSD-3-Clause/juniper.txt",
	"License/BSD-3-Clause/libcap.txt", "License/BSD-3-Clause/libcap2.txt", "License/BSD-3-Clause/libpcap.txt",
	"License/BSD-3-Clause/mtk_pcap.txt", "License/BSD-3-Clause/pristine.txt", "License/BSD-3-Clause/sun.txt",
	"Supplement/BSD-3-Clause/cjdict.txt", "Supplement/BSD-3-Clause/preface-chrome.txt",
	"Supplement/BSD-3-Clause/preface-libtabe.txt", "Supplement/BSD-3-Clause/preface-pcre.txt",
	"Supplement/BSD-3-Clause/protobuf.txt", "Supplement/BSD-3-Clause/uc-unix-a.txt",
	"Supplement/BSD-3-Clause/uc-unix-b.txt",
	"License/ISC/license.txt", "License/ISC/pristine.txt",
	"Header/MPL-2.0/header.txt", "License/MPL-2.0/license.txt", "License/MPL-2.0/pristine.txt",
}

// quickClassifier holds quickCorpus, loaded as the whole corpus is
// (same threshold, same categories and names), so that a match it
// finds is the match the whole corpus finds for that document.
var quickClassifier = sync.OnceValues(func() (*classifier.Classifier, error) {
	c := classifier.NewClassifier(.8)
	for _, p := range quickCorpus {
		b, err := assets.ReadLicenseFile(p)
		if err != nil {
			return nil, err
		}
		parts := strings.SplitN(p, "/", 3)
		c.AddContent(parts[0], parts[1], parts[2], b)
	}
	return c, nil
})

// maxQuickText is the longest text the quick corpus answers for.
const maxQuickText = 64 << 10

// quickMu serialises the quick classifier's matching, as classifierMu
// does the whole one's (the same Match, not safe for concurrent use).
var quickMu sync.Mutex

// quickClassify is classify's answer for text where it can give it
// without the whole corpus, and ok false where it cannot.
//
// It answers only when text is, token for token, copies of licences
// the quick corpus holds: every licence match exact (confidence 1) and
// the matches together covering every token of text the classifier
// reads (copyright lines it sets aside are no tokens). The whole
// corpus then finds the same matches, and no other document can add
// one: a text elsewhere in the file would be tokens no match covers,
// and a larger licence that contains one of these (as NPL contains MPL)
// cannot match more tokens than the file has, which the classifier
// needs to prefer it over an exact match. TestQuickClassifyAgrees
// holds every text of the corpus, and such texts with more around
// them, to the whole classifier's answer.
func quickClassify(text []byte) (classification, bool) {
	// tokenCount's match of a text against itself grows with the square
	// of what repeats in it: a notices file of a thousand MIT copies
	// took 12 s where the whole corpus takes half a second. The largest
	// quick text (MPL-2.0) is 16 KiB; several back to back still fit.
	if len(text) > maxQuickText {
		return classification{}, false
	}
	c, err := quickClassifier()
	if err != nil {
		return classification{}, false
	}
	quickMu.Lock()
	res := c.Match(text)
	quickMu.Unlock()
	kept := licenseMatches(res.Matches)
	if len(kept) == 0 {
		return classification{}, false
	}
	covered := 0 // tokens [0, covered) are within a licence match
	for _, m := range kept {
		if m.Confidence < 1 || m.StartTokenIndex > covered {
			return classification{}, false
		}
		covered = max(covered, m.EndTokenIndex+1)
	}
	if n, ok := tokenCount(text); !ok || covered != n {
		return classification{}, false
	}
	return classificationOf(kept), true
}

// tokenCount is how many tokens the classifier reads in text: the
// extent of the one match a corpus of text alone finds in it, which
// covers all of it. ok is false where that match is not whole (a text
// too short for the classifier's search to find), for the caller to
// take the whole corpus's answer.
func tokenCount(text []byte) (int, bool) {
	c := classifier.NewClassifier(.8)
	c.AddContent("License", "self", "self", text)
	res := c.Match(text)
	if len(res.Matches) == 0 {
		return 0, false
	}
	n := -1
	for _, m := range res.Matches {
		if m.MatchType != "License" {
			continue
		}
		if m.Confidence < 1 || m.StartTokenIndex != 0 || n != -1 {
			return 0, false
		}
		n = m.EndTokenIndex + 1
	}
	return n, n > 0
}
