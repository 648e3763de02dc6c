package artifact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/platform"
)

// mirrorRepo keeps a bare mirror of g's repository holding the pinned
// commit, with the files a dumb-http server needs, so the directory can
// also be served as a --mirror-url.
func (f *Fetcher) mirrorRepo(ctx context.Context, dir string, g gitRef) error {
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

// mirrorGoModules downloads the modules a Go build of the module in
// moduleDir needs, and its pinned toolchain (itself a module), into the
// mirror's module cache.
func (f *Fetcher) mirrorGoModules(ctx context.Context, dir string, p platform.Platform, g *Go, moduleDir string) error {
	env := append(f.goEnv(g, p),
		"GOMODCACHE="+ModuleCache(dir),
		// Writable, so the mirror can be deleted and copied like any directory.
		"GOFLAGS=-modcacherw")
	cmd := command(ctx, "go", "mod", "download")
	cmd.Dir = moduleDir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download (in %s): %w\n%s", g.Module, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ModuleCache is the Go module cache inside a mirror.
func ModuleCache(mirror string) string {
	return filepath.Join(mirror, "gomod")
}
