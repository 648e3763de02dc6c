package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// MirrorTo copies what arts download or clone into the mirror directory
// dir: downloads as sha256/<digest> (verified), repositories as bare
// mirrors under git/ holding the pinned commit, with the files a dumb-http
// server needs, so the directory can also be served as a --mirror-url.
// Local modes and local Go modules have nothing to mirror.
func (f *Fetcher) MirrorTo(ctx context.Context, dir string, arts []*Artifact) error {
	for _, a := range arts {
		var err error
		switch {
		case a.URL != nil:
			err = f.mirrorDownload(ctx, dir, a.URL)
		case a.Git != nil:
			err = f.mirrorRepo(ctx, dir, a.Git)
		}
		if err != nil {
			return fmt.Errorf("artifact %s (%s, %s mode): %w", a.Name, a.Platform, a.Mode, err)
		}
	}
	return nil
}

func (f *Fetcher) mirrorDownload(ctx context.Context, dir string, u *URL) error {
	dst := mirrorBlob(dir, u.SHA256)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(dst); err == nil {
		// Already mirrored; verify rather than trust it.
		tmp := dst + ".check"
		defer os.Remove(tmp)
		if err := copyVerified(dst, u.SHA256, tmp); err == nil {
			return nil
		}
	}
	f.Log("mirror %s", u.URL)
	return f.Download(ctx, u.URL, u.SHA256, dst)
}

func (f *Fetcher) mirrorRepo(ctx context.Context, dir string, g *Git) error {
	dst := MirrorRepo(dir, g.Repo)
	if _, err := os.Stat(dst); err != nil {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f.Log("mirror %s", g.Repo)
		tmp := dst + ".new"
		os.RemoveAll(tmp)
		if _, err := git(ctx, filepath.Dir(dst), "clone", "-q", "--mirror", g.Repo, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	} else if _, err := git(ctx, dst, "cat-file", "-e", g.Commit+"^{commit}"); err != nil {
		if _, err := git(ctx, dst, "remote", "update", "--prune"); err != nil {
			return err
		}
	}
	if _, err := git(ctx, dst, "cat-file", "-e", g.Commit+"^{commit}"); err != nil {
		return fmt.Errorf("commit %s is not in %s", g.Commit, g.Repo)
	}
	_, err := git(ctx, dst, "update-server-info")
	return err
}
