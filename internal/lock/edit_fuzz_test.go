package lock

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzEdits pins a.sha256 in any document as lock does (set a scalar,
// make it a map of platforms, or add the key after url): each edit is
// refused, or leaves a document that reads as the one given with the
// pin written and nothing else changed.
func FuzzEdits(f *testing.F) {
	for _, s := range []string{
		"a:\n  sha256: old   # c\n",
		"a:\n  sha256: 'it''s'\n",
		"a:\n  commit:   # fill me\n  tag: v1\n",
		"a: {é: \"ü\", sha256: old}\n",
		"a:\n    url: x\n    sha256: old  # one for all\n    extract: {}\n",
		"a: {url: x, sha256: }\n",
		"a:\r\n  url: x\r\n  extract: {}\r\n",
		"a:\r  url: x\r  extract: {}\r",
		"a:\n  note: \"x\u2028y\"\n  sha256: old\n",
		"a:\n  note: 'x\u0085y'\n  url: x\n  extract: {}\n",
		"a:\n  url: x",
		"a:\n  sha256: {}  # none yet\n",
		"a:\n  sha256:\n    linux/amd64: aa   # amd\n  # next\n  extract: {}\n",
		"x: &pins {linux/amd64: aa}\na:\n  sha256: *pins\n",
		"a:\n  sha256: !!str\n",
		"a:\n  sha256: &pin old\n",
		"{\"a\": {\"url\": \"x\", \"sha256\": null}}\n",
		"{\"a\": {\"url\": \"x\"}}",
		"dl: &dl\n  url: x\na:\n  <<: *dl\n",
		"a:\n  url: x # c\n  # c\n\n",
	} {
		for op := range uint8(3) {
			f.Add(s, op)
		}
	}
	const pin = "0a0b"
	two := []entry{{key: "linux/amd64", value: "aa"}, {key: "linux/arm64", value: "bb"}}
	f.Fuzz(func(t *testing.T, src string, op uint8) {
		var before map[string]any
		if yaml.Unmarshal([]byte(src), &before) != nil {
			return
		}
		d, err := parseDoc([]byte(src))
		if err != nil {
			return
		}
		loc, parent, err := d.find([]string{"a", "sha256"})
		if err != nil {
			return
		}
		var want any
		switch {
		case loc.key != nil && op%3 == 0:
			err, want = d.setScalar(loc, pin), pin
		case loc.key != nil:
			err, want = d.setMap(loc, two), map[string]any{"linux/amd64": "aa", "linux/arm64": "bb"}
		default:
			err, want = d.add(parent, "url", []entry{{key: "sha256", value: pin}}), pin
		}
		if err != nil {
			return
		}
		out, err := d.apply()
		if err != nil {
			return
		}
		var after map[string]any
		if err := yaml.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q edited to %q, which does not parse: %v", src, out, err)
		}
		a, ok := before["a"].(map[string]any)
		if !ok {
			return
		}
		a["sha256"] = want
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%q edited to %q: reads as %v, want %v", src, out, after, before)
		}
	})
}
