package lock

import (
	"strings"
	"testing"
)

// Each edit changes the bytes it must and no other, in the forms YAML
// allows a pin to be written in.
func TestEdits(t *testing.T) {
	two := []entry{{key: "linux/amd64", value: "aa"}, {key: "linux/arm64", value: "bb"}}
	for _, tc := range []struct {
		name, src string
		keys      []string
		op        func(d *doc, loc, parent located) error
		want, err string
	}{{
		name: "set plain",
		src:  "a:\n  sha256: old   # c\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		want: "a:\n  sha256: new   # c\n",
	}, {
		name: "set single-quoted",
		src:  "a:\n  sha256: 'it''s'\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		want: "a:\n  sha256: 'new'\n",
	}, {
		name: "set empty, with a comment",
		src:  "a:\n  commit:   # fill me\n  tag: v1\n",
		keys: []string{"a", "commit"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "c0") },
		want: "a:\n  commit: c0   # fill me\n  tag: v1\n",
	}, {
		name: "set after multi-byte characters",
		src:  "a: {é: \"ü\", sha256: old}\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		want: "a: {é: \"ü\", sha256: new}\n",
	}, {
		name: "scalar to block map",
		src:  "a:\n    url: x\n    sha256: old  # one for all\n    extract: {}\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setMap(loc, two) },
		want: "a:\n    url: x\n    sha256:\n        linux/amd64: aa\n        linux/arm64: bb  # one for all\n    extract: {}\n",
	}, {
		name: "empty to flow map",
		src:  "a: {url: x, sha256: }\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setMap(loc, two) },
		want: "a: {url: x, sha256: {linux/amd64: aa, linux/arm64: bb} }\n",
	}, {
		name: "new key after the anchor, CRLF",
		src:  "a:\r\n  url: x\r\n  extract: {}\r\n",
		keys: []string{"a", "sha256"},
		op: func(d *doc, _, parent located) error {
			return d.add(parent, "url", []entry{{key: "sha256", sub: two}})
		},
		want: "a:\r\n  url: x\r\n  sha256:\r\n    linux/amd64: aa\r\n    linux/arm64: bb\r\n  extract: {}\r\n",
	}, {
		name: "new key, lines ended by CR alone",
		src:  "a:\r  url: x\r  extract: {}\r",
		keys: []string{"a", "sha256"},
		op: func(d *doc, _, parent located) error {
			return d.add(parent, "url", []entry{{key: "sha256", sub: two}})
		},
		want: "a:\r  url: x\r  sha256:\r    linux/amd64: aa\r    linux/arm64: bb\r  extract: {}\r",
	}, {
		name: "set after a quoted value holding a line separator (U+2028)",
		src:  "a:\n  note: \"x\u2028y\"\n  sha256: old\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		want: "a:\n  note: \"x\u2028y\"\n  sha256: new\n",
	}, {
		name: "new key after a quoted value holding NEL (U+0085)",
		src:  "a:\n  note: 'x\u0085y'\n  url: x\n  extract: {}\n",
		keys: []string{"a", "sha256"},
		op: func(d *doc, _, parent located) error {
			return d.add(parent, "url", []entry{{key: "sha256", value: "s"}})
		},
		want: "a:\n  note: 'x\u0085y'\n  url: x\n  sha256: s\n  extract: {}\n",
	}, {
		name: "new key at the end of a file without a final newline",
		src:  "a:\n  url: x",
		keys: []string{"a", "sha256"},
		op: func(d *doc, _, parent located) error {
			return d.add(parent, "url", []entry{{key: "sha256", value: "s"}})
		},
		want: "a:\n  url: x\n  sha256: s",
	}, {
		name: "entry into an empty flow map",
		src:  "a:\n  sha256: {}  # none yet\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.add(loc, "", two) },
		want: "a:\n  sha256: {linux/amd64: aa, linux/arm64: bb}  # none yet\n",
	}, {
		name: "entry after the last of a block map",
		src:  "a:\n  sha256:\n    linux/amd64: aa   # amd\n  # next\n  extract: {}\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.add(loc, "", two[1:]) },
		want: "a:\n  sha256:\n    linux/amd64: aa   # amd\n    linux/arm64: bb\n  # next\n  extract: {}\n",
	}, {
		name: "an alias is not written through",
		src:  "x: &pins {linux/amd64: aa}\na:\n  sha256: *pins\n",
		keys: []string{"a", "sha256"},
		err:  "YAML alias",
	}, {
		name: "a tagged empty value is left to a person",
		src:  "a:\n  sha256: !!str\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		err:  "line 2: the value has a YAML tag or anchor (!!str); edit it by hand",
	}, {
		name: "a tagged empty value is not made a map",
		src:  "a:\n  sha256: !!str\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setMap(loc, two) },
		err:  "line 2: the value has a YAML tag or anchor (!!str); edit it by hand",
	}, {
		name: "a tagged null is left to a person",
		src:  "a:\n  sha256: !!null   # none\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		err:  "line 2: the value has a YAML tag or anchor (!!null); edit it by hand",
	}, {
		name: "an anchored value is left to a person",
		src:  "a:\n  sha256: &pin old\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		err:  "line 2: the value has a YAML tag or anchor (&pin); edit it by hand",
	}, {
		name: "a tagged empty flow map is left to a person",
		src:  "a:\n  sha256: !!map {}\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.add(loc, "", two) },
		err:  "line 2: the value has a YAML tag or anchor (!!map); edit it by hand",
	}, {
		name: "an empty section written with a tag is left to a person",
		src:  "a:  ! {}\n",
		keys: []string{"a", "sha256"},
		op: func(d *doc, _, parent located) error {
			return d.add(parent, "url", []entry{{key: "sha256", value: "s"}})
		},
		err: "line 1: the value has a YAML tag or anchor (!); edit it by hand",
	}, {
		name: "an anchored empty flow map is left to a person",
		src:  "a:\n  sha256: &pins {}\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.add(loc, "", two) },
		err:  "line 2: the value has a YAML tag or anchor (&pins); edit it by hand",
	}, {
		name: "a block scalar is left to a person",
		src:  "a:\n  sha256: |\n    old\n",
		keys: []string{"a", "sha256"},
		op:   func(d *doc, loc, _ located) error { return d.setScalar(loc, "new") },
		err:  "edit it by hand",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseDoc([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			loc, parent, err := d.find(tc.keys)
			if err == nil {
				err = tc.op(d, loc, parent)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := d.apply()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", out, tc.want)
			}
		})
	}
}

func TestLookupChecksum(t *testing.T) {
	const (
		a = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
		b = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"
	)
	for _, tc := range []struct {
		name, file, want, err string
		// url is the download's URL path; /v1/app.tgz when empty.
		url string
	}{
		{"sha256sum", a + "  other.tgz\n" + b + "  app.tgz\n", b, "", ""},
		{"binary mode", a + " *app.tgz\n", a, "", ""},
		{"with a directory", "# comment\n" + a + "  ./dist/app.tgz\n", a, "", ""},
		{"upper case", strings.ToUpper(a) + "  app.tgz\n", a, "", ""},
		{"BSD", "SHA256 (app.tgz) = " + b + "\n", b, "", ""},
		{"OpenSSL 3", "SHA2-256(other.tgz)= " + a + "\nSHA2-256(app.tgz)= " + b + "\n", b, "", ""},
		{"OpenSSL 1.1", "SHA256(app.tgz)= " + b + "\n", b, "", ""},
		{"bare hash", a + "\n", a, "", ""},
		{"bare hash, CRLF", a + "\r\n", a, "", ""},
		{"not listed", a + "  other.tgz\n", "", "no sha256 for app.tgz", ""},
		{"two bare hashes", a + "\n" + b + "\n", "", "no sha256 for app.tgz", ""},
		{"listed twice, differently", a + "  app.tgz\n" + b + "  app.tgz\n", "", "two different sha256", ""},
		{"a web page", "\n<!DOCTYPE html>\n<html><form>Sign in</form></html>\n", "", "a web page (HTML), not a list of checksums", ""},
		{"a list with an HTML comment line", "# <b>\n" + a + "  app.tgz\n", a, "", ""},
		{"a directory per platform", a + "  linux-amd64/app.tgz\n" + b + "  ./linux-arm64/app.tgz\n", b, "", "/v1/linux-arm64/app.tgz"},
		{"deeper directories", a + "  bin/linux/amd64/app.tgz\n" + b + "  bin/linux/arm64/app.tgz\n", a, "", "/dl/bin/linux/amd64/app.tgz"},
		{"the name itself over a build directory", b + "  dist/app.tgz\n" + a + "  app.tgz\n", a, "", ""},
		{"directories, none the URL's", a + "  linux-amd64/app.tgz\n" + b + "  linux-arm64/app.tgz\n", "", "two different sha256", ""},
		{"the URL's directory twice, differently", a + "  linux-arm64/app.tgz\n" + b + "  ./linux-arm64/app.tgz\n", "", "two different sha256", "/v1/linux-arm64/app.tgz"},
		{"a line of a megabyte", strings.Repeat("x", 1<<20) + "\n" + a + "  app.tgz\n", "", "not a list of checksums", ""},
	} {
		if tc.url == "" {
			tc.url = "/v1/app.tgz"
		}
		got, err := lookupChecksum(strings.NewReader(tc.file), tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
