package cache

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

func TestSourcesRememberAndLookup(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sources()
	if got := s.Lookup("r.example"); got != nil {
		t.Fatalf("empty cache knows %v", got)
	}
	if err := s.Remember("r.example", map[string]string{"sha256:aa": "one", "sha256:bb": "one"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remember("r.example", map[string]string{"sha256:bb": "two"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remember("other.example", map[string]string{"sha256:cc": "x"}); err != nil {
		t.Fatal(err)
	}
	got := s.Lookup("r.example")
	if len(got) != 2 || got["sha256:aa"] != "one" || got["sha256:bb"] != "two" {
		t.Errorf("r.example: %v, want aa in one, bb in two", got)
	}
	if got := s.Lookup("other.example"); len(got) != 1 || got["sha256:cc"] != "x" {
		t.Errorf("other.example: %v", got)
	}

	// A damaged file knows nothing, and the next Remember replaces it.
	if err := os.WriteFile(s.path("r.example"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := s.Lookup("r.example"); got != nil {
		t.Errorf("damaged file: %v, want nothing", got)
	}
	if err := s.Remember("r.example", map[string]string{"sha256:dd": "three"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Lookup("r.example"); len(got) != 1 || got["sha256:dd"] != "three" {
		t.Errorf("after replacing a damaged file: %v", got)
	}
	// A file that names another registry is not this one's.
	b, err := os.ReadFile(s.path("other.example"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path("r.example"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := s.Lookup("r.example"); got != nil {
		t.Errorf("another registry's file read as r.example's: %v", got)
	}
}

// Concurrent pushes to one registry keep each other's entries.
func TestSourcesConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer opens the cache itself, as separate processes do.
			c, err := Open(dir)
			if err != nil {
				t.Error(err)
				return
			}
			for j := range 5 {
				d := fmt.Sprintf("sha256:%02d%02d", i, j)
				if err := c.Sources().Remember("r.example", map[string]string{d: fmt.Sprint("repo", i)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sources().Lookup("r.example"); len(got) != 40 {
		t.Errorf("%d entries after 8 writers of 5, want 40", len(got))
	}
}

// The file is bounded: the entries pushed least recently go first.
func TestSourcesForgetOldest(t *testing.T) {
	m := map[string]sourcesEntry{
		"sha256:a": {Repository: "r", Pushed: 3},
		"sha256:b": {Repository: "r", Pushed: 1},
		"sha256:c": {Repository: "r", Pushed: 2},
		"sha256:d": {Repository: "r", Pushed: 1},
	}
	forgetOldest(m, 2)
	if len(m) != 2 || m["sha256:a"].Pushed != 3 || m["sha256:c"].Pushed != 2 {
		t.Errorf("kept %v, want a and c", m)
	}
}
