package plan

import (
	"strings"
	"testing"
)

func TestCheckNames(t *testing.T) {
	for _, repo := range []string{"app", "a.b", "a_b", "a__b", "a---b", "team/app", "example.com/team/app", "localhost:5000/app", "127.0.0.1:5000/a/b", strings.Repeat("a", 255)} {
		if err := CheckRepository(repo); err != nil {
			t.Errorf("repository %q: %v", repo, err)
		}
	}
	for _, repo := range []string{"", "App", "a..b", "a.", "-a", "a/", "a//b", "a:b", "a@sha256:" + strings.Repeat("0", 64), "ü", "a b", strings.Repeat("a", 256)} {
		if err := CheckRepository(repo); err == nil {
			t.Errorf("repository %q accepted", repo)
		}
	}
	for _, tag := range []string{"latest", "1.2.3", "v1.2.3-rc.1", "_x", "A_b-C.d", strings.Repeat("y", 128)} {
		if err := CheckTag(tag); err != nil {
			t.Errorf("tag %q: %v", tag, err)
		}
	}
	for _, tag := range []string{"", "-x", ".", ".x", "a:b", "a/b", "ü", "a b", strings.Repeat("y", 129)} {
		if err := CheckTag(tag); err == nil {
			t.Errorf("tag %q accepted", tag)
		}
	}
}

// A refused repository is told why: its length only where the length is
// what the grammar refuses, the path after a first component that reads
// as a host over 255 characters, and then that path's length; a long
// name refused for its case or characters is told that. It said the
// whole name's length for each.
func TestCheckRepositoryWhy(t *testing.T) {
	long := strings.Repeat("a", 250)
	for _, c := range []struct{ repo, want string }{
		{"example.com/" + strings.Repeat("a", 256), "its path after example.com/ is 256 characters long; at most 255 are allowed"},
		{strings.Repeat("a", 256), "it is 256 characters long; at most 255 are allowed"},
		{"example.com/" + long + "/B", "it must be lower-case"},
		{"example.com/" + long + "/a..b", "use lower-case letters and digits"},
		{"Team/App", "it must be lower-case"},
	} {
		err := CheckRepository(c.repo)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("repository %.40q... (%d): %v, want %q", c.repo, len(c.repo), err, c.want)
		}
	}
}
