package source

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MirrorTo copies what arts download or clone into the mirror directory
// dir: downloads as sha256/<digest> (verified), repositories as bare
// mirrors under git/ holding the pinned commit, with the files a dumb-http
// server needs, so the directory can also be served as a --mirror-url; and
// for Go builds, their module dependencies and pinned toolchain in a
// module cache under gomod/, which offline builds use as a file proxy.
// Local modes have nothing to mirror.
func (f *Fetcher) MirrorTo(ctx context.Context, dir string, arts []*Artifact) error {
	for _, a := range arts {
		var err error
		switch {
		case a.URL != nil:
			err = f.mirrorDownload(ctx, dir, a.URL)
		case a.Git != nil:
			if err = f.mirrorRepo(ctx, dir, a.Git); err == nil {
				err = f.mirrorGoModules(ctx, dir, *a)
			}
		case a.Go != nil:
			err = f.mirrorGoModules(ctx, dir, *a)
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

// mirrorGoModules downloads the modules a Go build needs, and its pinned
// toolchain (itself a module), into the mirror's module cache.
func (f *Fetcher) mirrorGoModules(ctx context.Context, dir string, a Artifact) error {
	module := a.Go.Module
	if a.Git != nil {
		tmp, err := os.MkdirTemp("", "pallet-fetch-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		src := filepath.Join(tmp, "src")
		// From the mirror just written, not the upstream again.
		m := *f
		m.Mirror, m.Offline = dir, true
		if err := m.checkout(ctx, a.Git, src); err != nil {
			return err
		}
		module = filepath.Join(src, filepath.FromSlash(module))
	}
	env, err := f.goEnv(a)
	if err != nil {
		return err
	}
	env = append(env,
		"GOMODCACHE="+ModuleCache(dir),
		// Writable, so the mirror can be deleted and copied like any directory.
		"GOFLAGS=-modcacherw")
	cmd := exec.CommandContext(ctx, "go", "mod", "download")
	cmd.Dir = module
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download (in %s): %w\n%s", a.Go.Module, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ModuleCache is the Go module cache inside a mirror.
func ModuleCache(mirror string) string {
	return filepath.Join(mirror, "gomod")
}
