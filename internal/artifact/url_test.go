package artifact

import (
	"strings"
	"testing"
)

func TestOriginHidesPassword(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cret@example.com/a.tgz": "https://user:xxxxx@example.com/a.tgz",
		// The user alone may be a token (https://TOKEN@host/...), as a
		// git repository's is (ShownURL).
		"https://user@example.com/a.tgz": "https://xxxxx@example.com/a.tgz",
		"https://example.com/a.tgz":      "https://example.com/a.tgz",
	} {
		if got := (&URL{URL: in}).Origin().URL; got != want {
			t.Errorf("%s: origin %s, want %s", in, got, want)
		}
	}
}

// A URL url.Parse refuses, which git may still take, shows no secret:
// it was given back whole, the password with it.
func TestShownURLUnparsed(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:50%off@host/r.git": "https://xxxxx@host/r.git",
		"https://u:ab/cd@host/r.git":     "https://xxxxx@host/r.git",
		"git@github.com:org/repo.git":    "git@github.com:org/repo.git",
		"https://host/a%zz":              "https://host/a%zz",
		"ssh://git:s3cret@host:22/r.git": "ssh://git:xxxxx@host:22/r.git",
		"https://[::1]:8080/r.git":       "https://[::1]:8080/r.git",
		"https://tok@[::1]:8080/r.git":   "https://xxxxx@[::1]:8080/r.git",
	} {
		if got := ShownURL(in); got != want {
			t.Errorf("ShownURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A url's key leaves out the credentials in it, as its record does: one
// CI job's token and the next's fetch the same pinned bytes.
func TestURLKeyWithoutCredentials(t *testing.T) {
	key := func(raw string) string {
		k, _, err := (&URL{URL: raw, SHA256: "ab"}).Key(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(k, "\x00")
	}
	if key("https://ci:first@example.com/a.tgz") != key("https://ci:second@example.com/a.tgz") {
		t.Error("two tokens for one URL gave two keys")
	}
	if key("https://example.com/a.tgz") == key("https://example.com/b.tgz") {
		t.Error("two URLs gave one key")
	}
}
