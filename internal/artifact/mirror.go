package artifact

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/module"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// mirrorRepo keeps a bare mirror of g's repository holding the pinned
// commit, with the files a dumb-http server needs, so the directory can
// also be served as a --mirror-url. The objects of the commit's checkout
// are hashed (verifyCheckoutObjects) each time: a mirror whose object was
// replaced or damaged is cloned again, or, when upstream gives the same,
// refused, rather than left for an offline build to trip on. All of it
// is held to one bound (boundGit).
func (f *Fetcher) mirrorRepo(ctx context.Context, dir string, g gitRef) (err error) {
	ctx, end := boundGit(ctx, f.Limits, g)
	defer func() { err = end(err) }()
	dst := MirrorRepo(dir, g.Repo)
	if _, err := os.Stat(dst); err != nil {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f.Log("mirror %s", ShownURL(g.Repo))
		if err := f.cloneMirror(ctx, g, dst); err != nil {
			return err
		}
	} else {
		if err := isBareRepo(ctx, dst); err != nil {
			return err
		}
		if _, err := git(ctx, dst, "cat-file", "-e", g.Commit+"^{commit}"); err != nil {
			// From the recipe's URL, not origin's: the mirror keeps
			// origin without its credentials (cloneMirror).
			if err := f.gitTransfer(ctx, dst, dst, "fetch", "--progress", "--prune", g.Repo, "+refs/*:refs/*"); err != nil {
				return fmt.Errorf("update %s: %w", ShownURL(g.Repo), err)
			}
			if err := originWithoutCredentials(ctx, dst, g.Repo); err != nil {
				return fmt.Errorf("update %s: %w", ShownURL(g.Repo), err)
			}
		}
		if err := mirroredCommit(ctx, dst, g); err != nil {
			var bad *corruptObjectError
			if !errors.As(err, &bad) {
				return err
			}
			f.Log("%v; cloning %s again", err, ShownURL(g.Repo))
			if cerr := f.cloneMirror(ctx, g, dst); cerr != nil {
				return fmt.Errorf("%w; left as it is, for cloning it again failed: %w", err, cerr)
			}
		}
	}
	_, err = git(ctx, dst, "update-server-info")
	return err
}

// isBareRepo refuses a dst that is not itself a bare repository: git run
// in it would look up the tree for one and fetch into, and write the
// server info of, a repository around the mirror that is not pallet's.
func isBareRepo(ctx context.Context, dst string) error {
	real, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return err
	}
	gitDir, err := git(ctx, dst, "rev-parse", "--absolute-git-dir")
	if err == nil {
		gitDir, err = filepath.EvalSymlinks(gitDir)
	}
	if err != nil || gitDir != real {
		return fmt.Errorf("mirror %s is not a git repository (pallet's are bare): remove it to have it cloned again", dst)
	}
	return nil
}

// cloneMirror clones g's repository into dst, which it replaces only once
// the clone holds g's commit whole.
func (f *Fetcher) cloneMirror(ctx context.Context, g gitRef, dst string) error {
	// A name of its own, which SweepMirrorDownloads knows for pallet's:
	// a fetch killed before the removal below leaves the clone, or the
	// old copy exchanged for it, for the next fetch to remove.
	tmp, err := tempfile.Dir(filepath.Dir(dst), mirrorCloneTemp(dst))
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := f.gitTransfer(ctx, filepath.Dir(dst), tmp, "clone", "--progress", "--mirror", g.Repo, tmp); err != nil {
		return fmt.Errorf("clone %s: %w", ShownURL(g.Repo), err)
	}
	if err := mirroredCommit(ctx, tmp, g); err != nil {
		return fmt.Errorf("clone %s: %w", ShownURL(g.Repo), err)
	}
	if err := originWithoutCredentials(ctx, tmp, g.Repo); err != nil {
		return fmt.Errorf("clone %s: %w", ShownURL(g.Repo), err)
	}
	return swapMirror(tmp, dst)
}

// originWithoutCredentials writes the mirror's origin as repo without
// the credentials in its URL: a mirror is served as it is (--mirror-url),
// its config too, and git clone wrote the token there. The URL is left
// usable (no user at all, not xxxxx): git reading the mirror's config
// (an older pallet updating a shared mirror from origin) then asks its
// own credentials. A mirror an earlier pallet made is mended when next
// updated.
func originWithoutCredentials(ctx context.Context, dir, repo string) error {
	if ShownURL(repo) == repo {
		return nil
	}
	origin := ShownURL(repo)
	if u, err := url.Parse(repo); err == nil {
		u.User = nil
		origin = u.String()
	}
	_, err := git(ctx, dir, "remote", "set-url", "origin", origin)
	return err
}

// afterMirrorExchange, when set (by tests), is called once a mirror's
// copy is exchanged for its fresh clone, with where the old copy now is,
// before it is removed: its error stands for the process dying there.
var afterMirrorExchange func(old string) error

// swapMirror puts the fresh clone tmp at dst, replacing a damaged copy.
// Where the kernel can exchange the two in one step, dst holds one
// complete copy at every instant: with two renames, a kill between them
// left no copy at all, and the next fetch needed the network. The old
// copy ends at tmp, for the caller to remove.
func swapMirror(tmp, dst string) error {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(tmp, dst)
	}
	if tempfile.Exchange(tmp, dst) == nil {
		if afterMirrorExchange != nil {
			return afterMirrorExchange(tmp)
		}
		return nil
	}
	// No exchange (another OS, an old kernel, some file systems): two
	// renames, the old copy put back if the second fails. Its name is
	// the clone's and more, for SweepMirrorDownloads to know it too.
	old := tmp + ".old"
	if err := os.Rename(dst, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if rerr := os.Rename(old, dst); rerr != nil {
			return fmt.Errorf("%w; the previous copy is at %s", err, old)
		}
		return err
	}
	os.RemoveAll(old)
	return nil
}

// mirroredCommit says whether the bare repository repo holds g's commit
// and every object of its checkout as their names say.
func mirroredCommit(ctx context.Context, repo string, g gitRef) error {
	if _, err := git(ctx, repo, "cat-file", "-e", g.Commit+"^{commit}"); err != nil {
		return fmt.Errorf("commit %s is not in %s", g.Commit, ShownURL(g.Repo))
	}
	if err := verifyCheckoutObjects(ctx, repo, g.Commit); err != nil {
		return &corruptObjectError{fmt.Errorf("the mirror of %s (%s): %w", ShownURL(g.Repo), repo, err)}
	}
	return nil
}

// corruptObjectError is a mirror holding the pinned commit with objects
// that are not what their names say.
type corruptObjectError struct{ error }

func (e *corruptObjectError) Unwrap() error { return e.error }

// verifyCheckoutObjects hashes the objects a checkout of commit reads in
// the repository repo (the commit, its trees and blobs: what a depth-1
// fetch of it sends, not its history) and fails on the first whose
// content does not hash to its name, or that git cannot read. git does
// not check that on read: a loose object rewritten in place is served
// under its old name, and only the fetch of an offline build, which
// hashes what it receives, would find its commit incomplete.
func verifyCheckoutObjects(ctx context.Context, repo, commit string) error {
	format, err := git(ctx, repo, "rev-parse", "--show-object-format")
	if err != nil {
		return err
	}
	var newHash func() hash.Hash
	switch format {
	case "sha1":
		newHash = sha1.New
	case "sha256":
		newHash = sha256.New
	default:
		return fmt.Errorf("object format %q", format)
	}
	// rev-list reads every tree to list what it holds: a tree it cannot
	// parse fails here.
	list, err := git(ctx, repo, "rev-list", "--objects", "--no-walk", "--no-object-names", commit)
	if err != nil {
		return err
	}
	ids := strings.Fields(list)
	bad, stderr, werr := gitStream(ctx, repo, strings.NewReader(strings.Join(ids, "\n")+"\n"), func(out io.Reader) error {
		return checkObjects(bufio.NewReaderSize(out, 64<<10), ids, newHash)
	}, "cat-file", "--batch")
	switch {
	case bad != nil:
		// git may have stopped first, and says why (a pack it cannot
		// inflate).
		return fmt.Errorf("%w%s", bad, Saying(stderr))
	case werr != nil:
		return fmt.Errorf("git cat-file --batch: %w%s", werr, Saying(stderr))
	}
	return nil
}

// checkObjects reads git cat-file --batch's answer for ids, in their
// order, and fails at the first object missing or not hashing to its
// name.
func checkObjects(r *bufio.Reader, ids []string, newHash func() hash.Hash) error {
	h := newHash()
	for _, id := range ids {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("object %s: %w", id, cmp.Or(err, io.ErrUnexpectedEOF))
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != id {
			return fmt.Errorf("object %s: git cat-file said %q", id, strings.TrimSpace(line))
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("object %s: git cat-file said %q", id, strings.TrimSpace(line))
		}
		h.Reset()
		fmt.Fprintf(h, "%s %d\x00", f[1], size)
		if _, err := io.CopyN(h, r, size); err != nil {
			return fmt.Errorf("object %s: %w", id, err)
		}
		if _, err := r.Discard(1); err != nil { // the newline after it
			return fmt.Errorf("object %s: %w", id, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != id {
			return fmt.Errorf("%s %s holds what hashes to %s: replaced or damaged", f[1], id, got)
		}
	}
	return nil
}

// mirrorGoModules puts in the mirror's module cache what a build of g in
// moduleDir for p reads through its GOPROXY: the go.mod files of the
// module graph it loads, the modules its packages come from and its
// pinned toolchain (itself a module). The go command finds them by
// loading the build's packages with the build's environment and flags.
// go mod download fetched the whole build list instead (test
// dependencies, tools, other platforms' packages): for the CNI plugins
// v1.10.0, 53 zips where the build reads 29.
func (f *Fetcher) mirrorGoModules(ctx context.Context, dir string, p platform.Platform, g *Go, moduleDir string) error {
	env, err := f.MirrorGoEnv(g, p, dir)
	if err != nil {
		return err
	}
	// A user's single file:// GOPROXY with GOSUMDB=off: the go command
	// would run the pinned toolchain from there unchecked.
	env, err = VerifyGoToolchain(ctx, moduleDir, env)
	if err != nil {
		return err
	}
	// -json=Module after the recipe's flags, so that it chooses the
	// output even when they hold go build's -json.
	args := append(append([]string{"list", "-deps"}, g.buildFlags()...), "-json=Module")
	args = append(args, g.Packages...)
	cmd := Command(ctx, "go", args...)
	cmd.Dir = moduleDir
	cmd.Env = env
	stdout, stderr := &bounded.Output{Max: maxCommandOutput}, &bounded.Output{Max: maxCommandComplaint}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := bounded.Answered(cmd, cmd.Run()); err != nil {
		return fmt.Errorf("go %s (in %s, %s): %w\n%s", shellJoin(args), g.Module, p, err, f.explainGo(strings.TrimSpace(stderr.String())))
	}
	if stdout.Over() {
		return fmt.Errorf("go %s (in %s, %s): over %d bytes of output", shellJoin(args), g.Module, p, maxCommandOutput)
	}
	mods, err := packageModules(stdout.Bytes())
	if err != nil {
		return fmt.Errorf("go list (in %s, %s): %w", g.Module, p, err)
	}
	// The licences a build ships are read from the zips of the modules
	// linked in, fetched through the mirror when the module cache lacks
	// them. Loading the packages fetched those zips, but not in vendor
	// mode: the build reads vendor/ instead, where go mod vendor copies
	// only some licence files.
	var missing []module.Version
	for _, m := range mods {
		if !proxyHas(ModuleCache(dir), m) {
			missing = append(missing, m)
		}
	}
	return downloadModules(ctx, env, missing)
}

// packageModules reads go list -json=Module's output: the module versions
// the packages come from (the replacement, for a replaced module), once
// each, in order; not the main module, nor one replaced by a directory.
func packageModules(out []byte) ([]module.Version, error) {
	type mod struct {
		Path, Version string
		Main          bool
		Replace       *mod
	}
	var mods []module.Version
	seen := map[module.Version]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var pkg struct{ Module *mod }
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			return mods, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading its output: %w", err)
		}
		m := pkg.Module
		if m == nil || m.Main {
			continue // the standard library, the main module
		}
		if m.Replace != nil {
			m = m.Replace
		}
		v := module.Version{Path: m.Path, Version: m.Version}
		if v.Version == "" || seen[v] {
			continue
		}
		seen[v] = true
		mods = append(mods, v)
	}
}

// proxyHas says whether the module cache cache, served as a file://
// GOPROXY, has what go mod download of m reads: its .info, .mod and .zip.
func proxyHas(cache string, m module.Version) bool {
	base, _, err := ModuleCachePaths(cache, m)
	if err != nil {
		return false
	}
	for _, ext := range []string{".info", ".mod", ".zip"} {
		if info, err := os.Stat(base + ext); err != nil || !info.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// ModuleCachePaths are where the module cache cache (GOMODCACHE) keeps
// module version m, path and version escaped as the go command escapes
// them: download, what go mod download fetched without each file's
// extension (.info, .mod, .zip, .ziphash), in the file proxy the cache
// holds (proxyDir); unpacked, the tree it unpacked, at <path>@<version>.
// The one spelling of that layout, which the builds, the mirror and the
// module licences read.
func ModuleCachePaths(cache string, m module.Version) (download, unpacked string, err error) {
	ep, ev, err := escaped(m)
	if err != nil {
		return "", "", err
	}
	return proxyFiles(proxyDir(cache), ep, ev), filepath.Join(cache, filepath.FromSlash(ep)+"@"+ev), nil
}

// proxyDir is the file module proxy a module cache holds: what go mod
// download fetched, in a proxy's layout, served by GOPROXY=file://<it>.
func proxyDir(cache string) string { return filepath.Join(cache, "cache", "download") }

// proxyPath is where the file module proxy at root keeps m's files,
// without their extension: <path>/@v/<version>, escaped.
func proxyPath(root string, m module.Version) (string, error) {
	ep, ev, err := escaped(m)
	if err != nil {
		return "", err
	}
	return proxyFiles(root, ep, ev), nil
}

func proxyFiles(root, ep, ev string) string {
	return filepath.Join(root, filepath.FromSlash(ep), "@v", ev)
}

// escaped is m's path and version as the go command spells them on disk.
func escaped(m module.Version) (ep, ev string, err error) {
	if ep, err = module.EscapePath(m.Path); err != nil {
		return "", "", err
	}
	if ev, err = module.EscapeVersion(m.Version); err != nil {
		return "", "", err
	}
	return ep, ev, nil
}

// downloadBatch bounds the modules one go mod download is given, and so
// its command line.
const downloadBatch = 100

// downloadModules runs go mod download with env for mods, in an empty
// directory: no go.mod to change what is resolved, nor go.sum to write.
func downloadModules(ctx context.Context, env []string, mods []module.Version) error {
	if len(mods) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp("", "pallet-fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for start := 0; start < len(mods); start += downloadBatch {
		args := []string{"mod", "download"}
		for _, m := range mods[start:min(start+downloadBatch, len(mods))] {
			args = append(args, m.String())
		}
		cmd := Command(ctx, "go", args...)
		cmd.Dir = tmp
		cmd.Env = env
		out := &bounded.Output{Max: maxCommandComplaint}
		cmd.Stdout, cmd.Stderr = out, out
		if err := bounded.Answered(cmd, cmd.Run()); err != nil {
			return fmt.Errorf("go mod download: %w\n%s", err, strings.TrimSpace(out.String()))
		}
	}
	return nil
}

// MirrorGoEnv is the environment of g's go command for p with the
// mirror's module cache, claimed (ClaimModuleCache), written with
// -modcacherw (so the mirror can be deleted and copied like any
// directory), added to the GOFLAGS the build sets.
func (f *Fetcher) MirrorGoEnv(g *Go, p platform.Platform, mirror string) ([]string, error) {
	if err := ClaimModuleCache(mirror); err != nil {
		return nil, err
	}
	env := f.goEnv(g, p)
	flags := EnvValue(env, "GOFLAGS") // the last, as for exec
	if !slices.Contains(strings.Fields(flags), "-modcacherw") {
		flags = strings.TrimSpace(flags + " -modcacherw")
	}
	return append(env, "GOMODCACHE="+ModuleCache(mirror), "GOFLAGS="+flags), nil
}

// PruneModuleCache removes from the mirror's module cache everything but
// cache/: the modules unpacked, and the pinned toolchains. Offline builds
// read the mirror only as a GOPROXY, file://.../cache/download, whose
// .info, .mod and .zip files hold all of it; unpacked, the same files
// take some three times the space (Go 1.25.5 for linux/amd64: 64 MB
// zipped, 214 MB unpacked). A later fetch that needs a tree unpacks it
// again from there.
//
// Only a module cache pallet made (ClaimModuleCache) is pruned: --mirror
// may name a directory whose gomod/ is someone else's.
func PruneModuleCache(mirror string) error {
	cache := ModuleCache(mirror)
	if _, err := os.Stat(filepath.Join(cache, ownerMark)); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "cache" || e.Name() == ownerMark {
			continue
		}
		p := filepath.Join(cache, e.Name())
		if err := os.RemoveAll(p); err != nil {
			// Unpacked read-only: by a go command without -modcacherw
			// (a user's, filling the mirror by hand).
			filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					os.Chmod(path, 0o755)
				}
				return nil
			})
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownerMark, in a mirror's module cache, says pallet made it.
const ownerMark = ".pallet-module-cache"

// ClaimModuleCache marks the mirror's module cache as pallet's when
// pallet is the one to make it; one that exists unmarked is left as it is.
func ClaimModuleCache(mirror string) error {
	cache := ModuleCache(mirror)
	switch _, err := os.Stat(cache); {
	case err == nil:
		return nil
	case !os.IsNotExist(err):
		return err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cache, ownerMark), []byte("Made by pallet fetch: a Go module cache served as a GOPROXY (cache/download); pallet removes what else is here.\n"), 0o644)
}

// SweepMirrorDownloads removes from the mirror's sha256/ what fetches
// killed half-way were downloading, left under its temporary name: each
// is as large as the download got, and no fetch ever took it up again.
// It removes as well, from git/, the clones such fetches left under
// theirs (mirrorCloneTemp): one half-made, or a repository's old copy,
// exchanged for its fresh clone just before the kill, as large as the
// repository; no later fetch took them up, and another repository's
// never even looked; and those an earlier pallet left as DST.new and
// DST.old. Only the holder of the mirror's lock may call it:
// another fetch's downloads are in use.
func SweepMirrorDownloads(mirror string) error {
	left, err := filepath.Glob(filepath.Join(mirror, "sha256", downloadTemp))
	if err != nil {
		return err
	}
	for _, p := range left {
		if fi, err := os.Lstat(p); err != nil || fi.IsDir() {
			continue
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	clones, err := filepath.Glob(filepath.Join(mirror, "git", mirrorCloneTemp("*")))
	if err != nil {
		return err
	}
	// The names a pallet before these made its clone and old copy under
	// (DST.new, DST.old), which only a clone of that same repository
	// removed, and which no clone now gives.
	for _, suffix := range []string{".new", ".old"} {
		earlier, err := filepath.Glob(filepath.Join(mirror, "git", "*-"+strings.Repeat("[0-9a-f]", 12)+".git"+suffix))
		if err != nil {
			return err
		}
		clones = append(clones, earlier...)
	}
	for _, p := range clones {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove what a killed fetch left: %w", err)
		}
	}
	return nil
}

// mirrorCloneTemp is the tempfile pattern of a clone of the mirror's
// repository dst while it is made, and of the old copy it replaces: a
// hidden name with ".new-" that pallet gives nothing else in git/.
func mirrorCloneTemp(dst string) string { return "." + filepath.Base(dst) + ".new-*" }

// ModuleCache is the Go module cache inside a mirror.
func ModuleCache(mirror string) string {
	return filepath.Join(mirror, "gomod")
}
