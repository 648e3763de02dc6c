package artifact

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// A mirror's copy cloned again (pallet fetch mending a damaged one)
// takes the old copy's place with the old one removed and nothing left
// beside it; and where the kernel exchanges the two in one step, a
// fetch dying just after the exchange, before the old copy is removed,
// leaves a complete repository at the mirror's path, where two renames
// left none between them and the next fetch needed the network.
func TestMirrorSwapKeepsACopy(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src, g := oneCommitRepo(t)
	f := New()
	f.Log = t.Logf
	ctx := context.Background()
	dst := MirrorRepo(t.TempDir(), src)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.cloneMirror(ctx, g, dst); err != nil {
		t.Fatal(err)
	}
	// What tells the old copy from the new.
	mark := filepath.Join(dst, "old-copy")
	isNewAndWhole := func(when string) {
		t.Helper()
		if err := mirroredCommit(ctx, dst, g); err != nil {
			t.Errorf("%s: the mirror's path holds no complete repository: %v", when, err)
		}
		if _, err := os.Lstat(mark); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the old copy is still at the mirror's path (%v)", when, err)
		}
	}

	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.cloneMirror(ctx, g, dst); err != nil {
		t.Fatal(err)
	}
	isNewAndWhole("cloned again")
	if left := besideMirror(t, dst); len(left) > 0 {
		t.Errorf("cloned again, the swap left %v", left)
	}

	a, b := t.TempDir(), t.TempDir()
	if err := tempfile.Exchange(a, b); err != nil {
		t.Skipf("no exchange here (%v): a swap is two renames", err)
	}
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	killed := errors.New("killed after the exchange")
	afterMirrorExchange = func(string) error {
		isNewAndWhole("at the kill")
		return killed
	}
	t.Cleanup(func() { afterMirrorExchange = nil })
	if err := f.cloneMirror(ctx, g, dst); !errors.Is(err, killed) {
		t.Fatalf("clone with a kill after the exchange: %v", err)
	}
	isNewAndWhole("after the kill")
}

// A fetch killed just after the exchange, before the old copy is
// removed, leaves that copy (as large as the repository) under a name
// the next fetch's sweep, at its start whatever it goes on to fetch,
// removes: it stayed as dst.new until the next clone of that same
// repository, which a mirror that stays whole never needs. What pallet
// did not write, beside it, stays.
func TestMirrorKilledAfterExchangeSwept(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	a, b := t.TempDir(), t.TempDir()
	if err := tempfile.Exchange(a, b); err != nil {
		t.Skipf("no exchange here (%v): a swap is two renames", err)
	}
	src, g := oneCommitRepo(t)
	f := New()
	f.Log = t.Logf
	ctx := context.Background()
	mirror := t.TempDir()
	dst := MirrorRepo(mirror, src)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.cloneMirror(ctx, g, dst); err != nil {
		t.Fatal(err)
	}
	// What is on disk at the kill: the old copy where the clone was made.
	// Out of the way of the removal a killed process never comes to, and
	// put back after.
	killed := errors.New("killed after the exchange")
	var old string
	kept := filepath.Join(mirror, "kept")
	afterMirrorExchange = func(at string) error {
		old = at
		if err := os.Rename(old, kept); err != nil {
			t.Error(err)
		}
		return killed
	}
	t.Cleanup(func() { afterMirrorExchange = nil })
	if err := f.cloneMirror(ctx, g, dst); !errors.Is(err, killed) {
		t.Fatalf("clone with a kill after the exchange: %v", err)
	}
	afterMirrorExchange = nil
	if err := os.Rename(kept, old); err != nil {
		t.Fatal(err)
	}
	left := besideMirror(t, dst)
	if len(left) != 1 {
		t.Fatalf("the kill left %v beside the mirror's copy, want its old copy", left)
	}
	if err := mirroredCommit(ctx, filepath.Join(filepath.Dir(dst), left[0]), g); err != nil {
		t.Fatalf("what the kill left is not the old copy: %v", err)
	}
	// Names like it that pallet never gives, which only a user could
	// have put there.
	theirs := []string{".notes.new", ".x.new.keep", "y.git.new-1"}
	for _, n := range theirs {
		if err := os.WriteFile(filepath.Join(filepath.Dir(dst), n), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if err := SweepMirrorDownloads(mirror); err != nil {
		t.Fatal(err)
	}
	left = besideMirror(t, dst)
	if !slices.Equal(left, slices.Sorted(slices.Values(theirs))) {
		t.Errorf("after the next fetch's sweep, beside the mirror's copy: %v, want only %v", left, theirs)
	}
	if err := mirroredCommit(ctx, dst, g); err != nil {
		t.Errorf("the sweep took the mirror's copy: %v", err)
	}
	if err := f.mirrorRepo(ctx, mirror, g); err != nil {
		t.Errorf("the mirror after the sweep: %v", err)
	}
}

// besideMirror is what is in the directory of the mirror's copy dst but
// dst, sorted.
func besideMirror(t *testing.T, dst string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dst))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != filepath.Base(dst) {
			names = append(names, e.Name())
		}
	}
	return names
}

// oneCommitRepo is a git repository holding one file in one commit, and
// that commit.
func oneCommitRepo(t *testing.T) (string, gitRef) {
	t.Helper()
	src := t.TempDir()
	fixture.Git(t, src, "init", "-q")
	if err := os.WriteFile(filepath.Join(src, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, src, "add", "a")
	fixture.Git(t, src, "commit", "-q", "-m", "a")
	return src, gitRef{Repo: src, Commit: fixture.Git(t, src, "rev-parse", "HEAD")}
}

// A mirror an earlier pallet fetched into keeps what its killed fetches
// left under the names it gave them then, DST.new and DST.old, which no
// clone now removes: the sweep does, and leaves names pallet never gave.
func TestMirrorSweepsEarlierClones(t *testing.T) {
	mirror := t.TempDir()
	dst := MirrorRepo(mirror, "https://example.com/org/tool.git")
	for _, d := range []string{dst, dst + ".new/objects", dst + ".old/objects"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	theirs := []string{"notes.git.new", "tool-0123.git.old", filepath.Base(dst) + ".new.keep"}
	for _, n := range theirs {
		if err := os.WriteFile(filepath.Join(filepath.Dir(dst), n), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := SweepMirrorDownloads(mirror); err != nil {
		t.Fatal(err)
	}
	if left := besideMirror(t, dst); !slices.Equal(left, slices.Sorted(slices.Values(theirs))) {
		t.Errorf("after the sweep, beside the mirror's copy: %v, want only %v", left, theirs)
	}
	if _, err := os.Stat(dst); err != nil {
		t.Errorf("the sweep took the mirror's copy: %v", err)
	}
}
