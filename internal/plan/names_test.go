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
