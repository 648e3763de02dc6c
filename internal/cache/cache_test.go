package cache

import (
	"os"
	"path/filepath"
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
	tmp, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "new"), []byte("whole"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := c.CommitArtifact(key, tmp)
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
