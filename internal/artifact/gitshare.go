package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// ShareCheckouts has the checkouts of one commit, one per platform that
// builds from it, fetch the commit once into dir and check out from
// there: a kind base image builds containerd for two platforms, and each
// fetched it from upstream. dir lasts as long as the checkouts do (the
// build's work directory).
func (f *Fetcher) ShareCheckouts(dir string) error {
	// Absolute: git reads a relative alternate from the checkout's
	// objects directory, not from where pallet runs (TMPDIR=tmp).
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	f.shared = &gitShare{dir: abs}
	return nil
}

// gitShare is the commits fetched in a build, each once, by pin.
type gitShare struct {
	dir   string
	repos sync.Map // gitRef → *sharedRepo
}

type sharedRepo struct {
	once sync.Once
	dir  string
	err  error
}

// objects is a bare repository holding g.Commit, fetched and proven
// (commit, tag) on first use.
func (s *gitShare) objects(ctx context.Context, f *Fetcher, g gitRef) (string, error) {
	v, _ := s.repos.LoadOrStore(g, &sharedRepo{})
	r := v.(*sharedRepo)
	r.once.Do(func() {
		sum := sha256.Sum256([]byte(g.Repo + "\x00" + g.Commit + "\x00" + g.Tag))
		r.dir = filepath.Join(s.dir, "git-"+hex.EncodeToString(sum[:8]))
		// Said here, as the first platform's bound ran out, for every
		// platform that checks the commit out.
		r.err = sayTimeout(ctx, f.fetchCommit(ctx, g, r.dir, true))
	})
	return r.dir, r.err
}

// checkoutShared checks g.Commit out in dir from the objects of a shared
// repository, which git reads through alternates: nothing is copied but
// the files themselves.
func checkoutShared(ctx context.Context, objects string, g gitRef, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := git(ctx, dir, append([]string{"init", "-q"}, objectFormat(g.Commit)...)...); err != nil {
		return err
	}
	gitDir := filepath.Join(dir, ".git")
	if err := os.WriteFile(filepath.Join(gitDir, "objects", "info", "alternates"), []byte(filepath.Join(objects, "objects")+"\n"), 0o644); err != nil {
		return err
	}
	// A depth-1 fetch leaves the commit without its parents: the shallow
	// file tells git where history stops, here as there.
	switch b, err := os.ReadFile(filepath.Join(objects, "shallow")); {
	case err == nil:
		if err := os.WriteFile(filepath.Join(gitDir, "shallow"), b, 0o644); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return checkoutCommit(ctx, dir, g)
}
