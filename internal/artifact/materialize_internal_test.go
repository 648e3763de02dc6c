package artifact

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// materialize hands each file it links the digest the build wrote it
// with, given in the order of the tree's files (directories and links
// among them take none), and a file it copies the digest of what it
// copied.
func TestMaterializeKnownInTreeOrder(t *testing.T) {
	work := t.TempDir()
	src := tree.New()
	for _, e := range []tree.Entry{
		{Path: "a", Kind: tree.Dir, Mode: 0o755},
		{Path: "a/x", Kind: tree.File, Mode: 0o644},
		{Path: "a/l", Kind: tree.Symlink, Link: "x", Mode: 0o777},
		{Path: "b", Kind: tree.File, Mode: 0o644},
		{Path: "c/d/y", Kind: tree.File, Mode: 0o644},
	} {
		if e.Kind == tree.File {
			e.Source = filepath.Join(work, filepath.FromSlash(e.Path))
			if err := os.MkdirAll(filepath.Dir(e.Source), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e.Source, []byte(e.Path), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	// Outside work: copied, and hashed as copied.
	own := filepath.Join(t.TempDir(), "own")
	if err := os.WriteFile(own, []byte("own"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := src.Add(tree.Entry{Path: "z", Kind: tree.File, Mode: 0o644, Source: own}); err != nil {
		t.Fatal(err)
	}
	// Files in order: a/x, b, c/d/y, z.
	known := []knownSum{{sum: [32]byte{1}, ok: true}, {}, {sum: [32]byte{3}, ok: true}, {sum: [32]byte{4}, ok: true}}
	files, err := materialize(src, t.TempDir(), work, known)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]knownSum{"a/x": known[0], "c/d/y": known[2], "z": {sum: sha256.Sum256([]byte("own")), ok: true}}
	if len(files) != 4 {
		t.Fatalf("%d files placed, want 4", len(files))
	}
	for _, p := range files {
		w, ok := want[p.rel]
		if p.summed != ok || ok && p.sum.sum != w.sum {
			t.Errorf("%s: summed %v, %x; want %v, %x", p.rel, p.summed, p.sum.sum[:2], ok, w.sum[:2])
		}
		if p.linked != (p.rel != "z") {
			t.Errorf("%s: linked %v", p.rel, p.linked)
		}
		if _, err := os.Stat(p.dst()); err != nil {
			t.Error(err)
		}
	}
}
