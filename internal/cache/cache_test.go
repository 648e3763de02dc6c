package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The remains of an entry whose build was killed (files, no marker) are no
// entry: a new commit replaces them, and a damaged entry is dropped whole.
func TestIncompleteArtifactIsReplaced(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := Key("artifact", "x")
	remains := filepath.Join(c.Dir(), "artifacts", key)
	if err := os.MkdirAll(filepath.Join(remains, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(remains, "tree", "half"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Artifact(key); ok {
		t.Fatal("an entry without its marker was taken")
	}
	tmp, release, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "new"), []byte("whole"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := c.CommitArtifact(key, tmp)
	release()
	if err != nil {
		t.Fatalf("commit over remains: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err != nil {
		t.Errorf("the new entry is not in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tree", "half")); err == nil {
		t.Error("the remains survived the commit")
	}
	if _, ok := c.Artifact(key); !ok {
		t.Error("the committed entry is not found")
	}

	if err := c.DropArtifact(key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a dropped entry is still there")
	}
	if left, _ := os.ReadDir(filepath.Join(c.Dir(), "tmp")); len(left) != 0 {
		t.Errorf("tmp/ holds %d entries after the drop", len(left))
	}
}

// Two builds replacing the same remains at once both end with one whole
// entry: neither discards what the other committed.
func TestConcurrentReplaceOfRemains(t *testing.T) {
	for round := range 20 {
		c, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		key := Key("artifact", "race", string(rune('a'+round)))
		if err := os.MkdirAll(filepath.Join(c.Dir(), "artifacts", key, "tree"), 0o755); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		dirs := make([]string, 2)
		errs := make([]error, 2)
		for i := range 2 {
			tmp, _, err := c.TempDir()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, "payload"), []byte("whole"), 0o644); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				dirs[i], errs[i] = c.CommitArtifact(key, tmp)
			}()
		}
		wg.Wait()
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("round %d, commit %d: %v", round, i, errs[i])
			}
			if b, err := os.ReadFile(filepath.Join(dirs[i], "payload")); err != nil || string(b) != "whole" {
				t.Fatalf("round %d, commit %d: the entry it returned is gone or wrong: %q %v", round, i, b, err)
			}
		}
		c.Close()
	}
}

// A key made part by part is the key of the list, and still tells lists
// apart that would concatenate alike.
func TestKeyerIsKey(t *testing.T) {
	parts := []string{"layer-v3", "linux", "a|file", ""}
	k := NewKeyer()
	for _, p := range parts {
		k.Add(p)
	}
	if got, want := k.Sum(), Key(parts...); got != want {
		t.Errorf("Keyer %s, Key %s", got, want)
	}
	// Parts as bytes make the same key, and both the key the cache's
	// entries were stored under: fmt's "%d:%s;" of each part.
	kb := NewKeyer()
	var formatted string
	for _, p := range parts {
		kb.AddBytes([]byte(p))
		formatted += fmt.Sprintf("%d:%s;", len(p), p)
	}
	if got, want := kb.Sum(), sha([]byte(formatted)); got != want || Key(parts...) != want {
		t.Errorf("AddBytes %s, Key %s, want %s", got, Key(parts...), want)
	}
	if Key("ab", "c") == Key("a", "bc") {
		t.Error("two lists with the same concatenation have one key")
	}
}
