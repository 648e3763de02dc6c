package build

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// A fetch into a mirror another fetch is filling waits for it, as each
// prunes the module trees the other's go command may be reading; it
// leaves the trees of neither, but cache/.
func TestMirrorIsLocked(t *testing.T) {
	dir := t.TempDir()
	if err := artifact.ClaimModuleCache(dir); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "gomod", "example.com", "m@v1.0.0")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "gomod", "cache", "download"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := flock.New(filepath.Join(dir, ".pallet-fetch.lock"))
	if err := other.Lock(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := Mirror(ctx, nil, Limits{}, dir, Network{}, Limits{}, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "lock the mirror") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fetch while another holds the mirror: %v", err)
	}
	if _, err := os.Stat(tree); err != nil {
		t.Fatalf("the waiting fetch pruned the other's tree: %v", err)
	}
	other.Unlock()
	if err := Mirror(context.Background(), nil, Limits{}, dir, Network{}, Limits{}, t.Logf); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Errorf("the unpacked tree is still in the mirror: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gomod", "cache", "download")); err != nil {
		t.Errorf("cache/ is gone: %v", err)
	}
}

// What a fetch killed half-way was downloading into the mirror is
// removed by the next fetch, which holds the mirror: the downloads in it,
// and files not pallet's, are kept.
func TestMirrorSweepsKilledDownloads(t *testing.T) {
	dir := t.TempDir()
	blobs := filepath.Join(dir, "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", "README"}
	for _, name := range append([]string{".download-1234567", ".download-89"}, keep...) {
		if err := os.WriteFile(filepath.Join(blobs, name), []byte("half a download"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Mirror(context.Background(), nil, Limits{}, dir, Network{}, Limits{}, t.Logf); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(blobs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(keep, " ") {
		t.Errorf("the mirror's sha256/ holds %q, want %q", got, keep)
	}
}

// A gomod/ pallet did not make, in a directory named as the mirror, is
// left as it is: pallet deletes nothing it did not write.
func TestMirrorLeavesAModuleCacheNotItsOwn(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "gomod", "myproject", "main.go")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Mirror(context.Background(), nil, Limits{}, dir, Network{}, Limits{}, t.Logf); err != nil {
		t.Fatal(err)
	}
	if err := artifact.ClaimModuleCache(dir); err != nil {
		t.Fatal(err)
	}
	if err := artifact.PruneModuleCache(dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "package main\n" {
		t.Errorf("a file pallet did not write: %q, %v", b, err)
	}
}
