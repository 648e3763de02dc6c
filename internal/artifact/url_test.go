package artifact

import "testing"

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
