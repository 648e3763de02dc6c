package source

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/tree"
)

// digest is the sha256 of a file, remembered by the cache across builds
// when there is one.
func (f *Fetcher) digest(path string) (string, error) {
	if f.Cache != nil {
		return f.Cache.FileSHA256(path)
	}
	return cache.HashFile(path)
}

// key is the cache key of a's result: everything that can change what the
// artifact produces. Local files and directories are not cached (they are
// used where they are), except archives, whose extraction is.
func (f *Fetcher) key(a Artifact) (string, bool, error) {
	parts := []string{"v2", a.Mode, a.Platform.String(), strings.Join(a.Licenses, "\x00"), strconv.FormatBool(a.NoLicense)}
	extract := func(e *Extract) string {
		if e == nil {
			return "-"
		}
		return fmt.Sprintf("%d|%s", e.Strip, strings.Join(e.Include, "\x00"))
	}
	switch {
	case a.URL != nil:
		parts = append(parts, "url", a.URL.SHA256, a.URL.Filename, a.URL.URL, extract(a.URL.Extract))
	case a.Local != nil:
		if a.Local.Extract == nil {
			return "", false, nil
		}
		info, err := os.Stat(a.Local.Path)
		if err != nil || info.IsDir() {
			return "", false, nil
		}
		sum, err := f.digest(a.Local.Path)
		if err != nil {
			return "", false, err
		}
		parts = append(parts, "local", sum, filepath.Base(a.Local.Path), extract(a.Local.Extract))
	case a.Go != nil:
		g := a.Go
		tc, err := toolchainIdentity(g.Version)
		if err != nil {
			return "", false, err
		}
		parts = append(parts, "go", tc, g.Module, strings.Join(g.Packages, "\x00"), strings.Join(g.Ldflags, "\x00"),
			strings.Join(g.Tags, "\x00"), strings.Join(g.Flags, "\x00"), strings.Join(g.Env, "\x00"),
			strconv.FormatBool(g.CGO), strconv.FormatBool(g.Trimpath), g.CC)
		if a.Git != nil {
			parts = append(parts, "git", a.Git.Repo, a.Git.Commit, a.Git.Tag)
		} else {
			sum, err := f.moduleDigest(g.Module)
			if err != nil {
				return "", false, err
			}
			parts = append(parts, "module", sum)
		}
	default:
		return "", false, nil
	}
	return cache.Key(parts...), true, nil
}

// moduleDigest covers every file of a local module (VCS metadata aside).
func (f *Fetcher) moduleDigest(dir string) (string, error) {
	t := tree.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".hg") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		return t.Add(tree.Entry{Path: filepath.ToSlash(rel), Kind: tree.File, Source: p})
	})
	if err != nil {
		return "", err
	}
	return treeDigest(t, f.digest)
}

var (
	hostGoOnce sync.Once
	hostGo     string
	hostGoErr  error
)

// toolchainIdentity names the Go toolchain a build uses without running
// it: the pinned release, or the host's go binary by path, size and mtime
// (asking `go env` would cost more than a no-op rebuild may take).
func toolchainIdentity(pinned string) (string, error) {
	if pinned != "" {
		return "go" + pinned, nil
	}
	hostGoOnce.Do(func() {
		p, err := exec.LookPath("go")
		if err != nil {
			hostGoErr = err
			return
		}
		if p, err = filepath.EvalSymlinks(p); err != nil {
			hostGoErr = err
			return
		}
		info, err := os.Stat(p)
		if err != nil {
			hostGoErr = err
			return
		}
		// GOTOOLCHAIN, from the environment or the go env file, may
		// select another Go than the one on PATH.
		toolchain := os.Getenv("GOTOOLCHAIN")
		if toolchain == "" {
			toolchain = goEnvFile()["GOTOOLCHAIN"]
		}
		hostGo = fmt.Sprintf("host:%s:%d:%d:%s", p, info.Size(), info.ModTime().UnixNano(), toolchain)
	})
	return hostGo, hostGoErr
}

// store copies res into a new cache entry (hard links where possible) and
// returns the result as read back from it, so every later build sees the
// same paths.
func (f *Fetcher) store(key string, res *Result, work string) (*Result, error) {
	tmp, err := f.Cache.TempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := materialize(res.Tree, filepath.Join(tmp, "tree"), work); err != nil {
		return nil, err
	}
	if err := materialize(res.Licenses, filepath.Join(tmp, "licenses"), work); err != nil {
		return nil, err
	}
	data, err := json.Marshal(res.Record)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "record.json"), data, 0o644); err != nil {
		return nil, err
	}
	sum, _, _, err := f.entryDigest(tmp)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "digest"), []byte(sum), 0o644); err != nil {
		return nil, err
	}
	dir, err := f.Cache.CommitArtifact(key, tmp)
	if err != nil {
		return nil, err
	}
	stored, err := f.fromCache(dir)
	if err != nil {
		return nil, err
	}
	stored.Cached = false
	return stored, nil
}

// entryDigest covers the trees of a cache entry. Written when the entry is
// made and compared when it is used: file digests come from the cache's
// memory while files are untouched, so the check costs little, and a file
// changed or damaged since is caught.
func (f *Fetcher) entryDigest(dir string) (string, *tree.Tree, *tree.Tree, error) {
	var trees [2]*tree.Tree
	var parts []string
	for i, sub := range []string{"tree", "licenses"} {
		t, err := tree.FromDir(filepath.Join(dir, sub))
		if err != nil {
			return "", nil, nil, err
		}
		sum, err := treeDigest(t, f.digest)
		if err != nil {
			return "", nil, nil, err
		}
		trees[i] = t
		parts = append(parts, sum)
	}
	return strings.Join(parts, " "), trees[0], trees[1], nil
}

// fromCache reads the cache entry at dir, refusing one whose files no
// longer match what was stored.
func (f *Fetcher) fromCache(dir string) (*Result, error) {
	want, err := os.ReadFile(filepath.Join(dir, "digest"))
	if err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	got, t, lic, err := f.entryDigest(dir)
	if err != nil || got != string(want) {
		return nil, fmt.Errorf("cache entry %s is damaged (its files changed since it was stored)", dir)
	}
	res := &Result{Tree: t, Licenses: lic, Cached: true}
	data, err := os.ReadFile(filepath.Join(dir, "record.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &res.Record); err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	return res, nil
}

// materialize writes t under dir, with the modes tree.FromDir reads back.
// Files pallet made under work are hard linked; any other file (the
// user's own) is copied, so that editing it in place cannot change the
// cache entry.
func materialize(t *tree.Tree, dir, work string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range t.Entries() {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		switch e.Kind {
		case tree.Dir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tree.Symlink:
			if err := os.Symlink(e.Link, p); err != nil {
				return err
			}
		case tree.File:
			if err := linkOrCopy(e.Source, p, e.Mode, within(e.Source, work)); err != nil {
				return err
			}
		}
	}
	return nil
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func linkOrCopy(src, dst string, mode os.FileMode, mayLink bool) error {
	// A hard link shares the inode, and with it the mode: only link when
	// the source already has the mode the tree says.
	if info, err := os.Stat(src); mayLink && err == nil && info.Mode().Perm() == mode.Perm() {
		if os.Link(src, dst) == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
