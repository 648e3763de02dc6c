package artifact

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	if left, _ := filepath.Glob(dst + ".*"); len(left) > 0 {
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
	afterMirrorExchange = func() error {
		isNewAndWhole("at the kill")
		return killed
	}
	t.Cleanup(func() { afterMirrorExchange = nil })
	if err := f.cloneMirror(ctx, g, dst); !errors.Is(err, killed) {
		t.Fatalf("clone with a kill after the exchange: %v", err)
	}
	isNewAndWhole("after the kill")
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
