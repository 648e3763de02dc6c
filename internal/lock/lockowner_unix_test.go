//go:build unix

package lock

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A recipe locked by another user than its owner (root, in a CI
// container on a user's checkout) keeps its owner, group and mode: the
// rename put a file of root's in its place, 0640 and unreadable to the
// user whose recipe it was.
func TestLockKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user takes root")
	}
	w := newWorld(t)
	if err := os.Chown(w.file, 1234, 2345); err != nil {
		t.Fatal(err)
	}
	if _, err := w.lock(t, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := w.read(t); got != w.locked() {
		t.Fatalf("locked recipe:\n%s", got)
	}
	fi, err := os.Stat(w.file)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 1234 || st.Gid != 2345 || fi.Mode().Perm() != 0o640 {
		t.Errorf("after lock: uid %d, gid %d, mode %v; want 1234, 2345, 0640", st.Uid, st.Gid, fi.Mode())
	}
}

// A recipe with a second name (a hard link) is not rewritten: the
// rename would leave the other name holding the recipe unpinned, two
// files where the user had one.
func TestLockRefusesHardLinkedRecipe(t *testing.T) {
	w := newWorld(t)
	other := filepath.Join(t.TempDir(), "also.yaml")
	if err := os.Link(w.file, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	_, err := w.lock(t, Options{})
	if err == nil || !strings.Contains(err.Error(), w.file+" has 2 names (hard links)") {
		t.Errorf("lock of a hard-linked recipe: %v", err)
	}
	if got := w.read(t); got != w.src {
		t.Errorf("the recipe was written:\n%s", got)
	}
	a, _ := os.Stat(w.file)
	b, _ := os.Stat(other)
	if !os.SameFile(a, b) {
		t.Error("the recipe's names were parted")
	}
	if ents, _ := os.ReadDir(filepath.Dir(w.file)); len(ents) != 1 {
		t.Errorf("left beside the recipe: %v", ents)
	}
}

// A recipe lock has nothing to write to, every pin current, is checked
// and left alone whatever would keep lock from rewriting it (read-only,
// a second name): those matter to a write, and there is none.
func TestLockCurrentRecipeNotRewritable(t *testing.T) {
	w := newWorld(t)
	if _, err := w.lock(t, Options{}); err != nil {
		t.Fatal(err)
	}
	locked := w.read(t)
	if err := os.Link(w.file, filepath.Join(t.TempDir(), "also.yaml")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := os.Chmod(w.file, 0o444); err != nil {
		t.Fatal(err)
	}
	rep, err := w.lock(t, Options{})
	if err != nil || rep.Written || rep.Current != 7 {
		t.Errorf("lock of a current recipe, read-only and linked: %v, %+v", err, rep)
	}
	if w.read(t) != locked {
		t.Error("the recipe changed")
	}
}
