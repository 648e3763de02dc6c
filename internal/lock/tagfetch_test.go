package lock

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A tag whose commit the recipe already pins is asked of the repository
// (ls-remote) and no more: the fetch that tells a tag of a tree from a
// tag of a commit is for a pin lock would write, and a --check of a
// locked recipe, run on every change in CI, fetches nothing.
func TestLockedTagFetchesNothing(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	w := newWorld(t)
	if _, err := w.lock(t, Options{}); err != nil {
		t.Fatal(err)
	}
	// git, logging each command it is asked, in front of the real one.
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "git.log")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if _, err := w.lock(t, Options{Check: true}); err != nil {
		t.Fatalf("lock --check of a locked recipe: %v", err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("git was not run through the wrapper: %v", err)
	}
	asked := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.Contains(string(data), "ls-remote") {
		t.Fatalf("git was asked %q, want ls-remote among them (else this test shows nothing)", asked)
	}
	for _, c := range asked {
		if f := strings.Fields(c); slices.Contains(f, "fetch") || slices.Contains(f, "clone") {
			t.Errorf("lock --check of a locked recipe ran git %s", c)
		}
	}
}
