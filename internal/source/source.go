// Package source obtains artifacts: it turns one artifact, for one
// platform, into a file tree on disk plus the licence files that go with
// it. Each kind (local path, pinned download, Go build from a local module
// or a pinned git commit) is a small function; the plan decides which to
// call, so an artifact mode that was not chosen never reaches this package.
package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Artifact is a fully expanded request for one artifact on one platform.
// Exactly one of Local, URL and Go is set; Git, with Go, builds from a
// checkout instead of a local module.
type Artifact struct {
	Name     string
	Platform platform.Platform
	// Mode is the artifact mode chosen ("source", "release", "local"), or
	// the kind for artifacts without modes.
	Mode    string
	Version string
	Local   *Local
	URL     *URL
	Go      *Go
	Git     *Git
	// Licenses names licence files relative to the artifact's root; nil
	// finds them by name. NoLicense declares there is none to ship.
	Licenses  []string
	NoLicense bool
}

// Local takes a path on disk.
type Local struct {
	Path    string // absolute
	Extract *Extract
}

// URL downloads a pinned file.
type URL struct {
	URL      string
	SHA256   string
	Filename string
	Extract  *Extract
}

// Go builds packages of a module: a local directory, or a directory of
// the Git checkout when Artifact.Git is set.
type Go struct {
	Module   string // absolute, or relative to the checkout
	Packages []string
	Ldflags  []string
	Tags     []string
	Flags    []string
	Env      []string
	CGO      bool
	Trimpath bool
	// Version pins the toolchain through GOTOOLCHAIN ("1.23.4").
	Version string
	// CC is the C compiler for cgo, when set.
	CC string
}

// Git is a repository pinned by commit.
type Git struct {
	Repo   string
	Commit string
	Tag    string
}

// Extract asks for an archive to be unpacked.
type Extract struct {
	Strip   int
	Include []string
}

// Result is what an artifact produced.
type Result struct {
	Tree *tree.Tree
	// Licenses holds the licence files found, named relative to the
	// artifact's root; placed under /LICENSES/<artifact>/.
	Licenses *tree.Tree
	Record   Record
	// Cached says the result came from the cache: nothing was fetched or built.
	Cached bool
}

// Record describes where an artifact came from, for logs and the build record.
type Record struct {
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform"`
	URL      string `json:"url,omitempty"`
	Path     string `json:"path,omitempty"`
	Repo     string `json:"repo,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// SHA256 is the digest of what was fetched or taken: the download, a
	// local file, or a local directory's tree digest.
	SHA256 string `json:"sha256,omitempty"`
	// GoVersion is the toolchain that built a source or go artifact.
	GoVersion string `json:"goToolchain,omitempty"`
}

// Fetcher obtains artifacts. Its zero value is not usable; use New.
type Fetcher struct {
	Client *http.Client
	// Retries is how many times a failed download is tried again.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// Mirror is a directory written by `pallet fetch`: downloads and git
	// repositories are taken from it when present.
	Mirror string
	// MirrorURL serves a mirror's layout over http(s); downloads and
	// repositories come from there instead of their upstream URLs.
	MirrorURL string
	// Offline forbids the network: everything must be in Mirror.
	Offline bool
	// Cache, when set, keeps downloads and built artifacts between builds.
	Cache *cache.Cache
	// Log receives one line per notable event (retries, warnings).
	Log func(format string, args ...any)
}

// New returns a Fetcher with sensible network defaults.
func New() *Fetcher {
	return &Fetcher{
		Client:  &http.Client{Timeout: 30 * time.Minute},
		Retries: 3,
		Backoff: 500 * time.Millisecond,
		Log:     func(string, ...any) {},
	}
}

// Fetch produces a's tree under work, a directory owned by this call. With
// a cache, an artifact whose inputs were seen before is taken from it, and
// a new one is built under a lock and stored.
func (f *Fetcher) Fetch(ctx context.Context, a Artifact, work string) (*Result, error) {
	res, err := f.fetch(ctx, a, work)
	if err != nil {
		return nil, fmt.Errorf("artifact %s (%s, %s mode): %w", a.Name, a.Platform, a.Mode, err)
	}
	// Where it came from is the request's, never the cache entry's: the
	// entry may have been made from a copy elsewhere, by another recipe.
	res.Record.URL, res.Record.Path, res.Record.Repo, res.Record.Commit = a.origin()
	res.Record.Name = a.Name
	res.Record.Mode = a.Mode
	res.Record.Version = a.Version
	res.Record.Platform = a.Platform.String()
	if res.Licenses == nil {
		res.Licenses = tree.New()
	}
	return res, nil
}

// origin is where a's content comes from, as the build record shows it.
func (a Artifact) origin() (url, path, repo, commit string) {
	switch {
	case a.Local != nil:
		return "", a.Local.Path, "", ""
	case a.URL != nil:
		return a.URL.URL, "", "", ""
	case a.Git != nil:
		return "", "", a.Git.Repo, a.Git.Commit
	case a.Go != nil:
		return "", a.Go.Module, "", ""
	}
	return "", "", "", ""
}

func (f *Fetcher) fetch(ctx context.Context, a Artifact, work string) (*Result, error) {
	if f.Cache == nil {
		return f.produce(ctx, a, work)
	}
	key, ok, err := f.key(a)
	if err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return f.produce(ctx, a, work)
	}
	if dir, hit := f.Cache.Artifact(key); hit {
		if res, err := f.fromCache(dir); err == nil {
			return res, nil
		}
	}
	unlock, err := f.Cache.Lock("artifact-" + key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another build may have made it while this one waited for the lock.
	if dir, hit := f.Cache.Artifact(key); hit {
		res, err := f.fromCache(dir)
		if err == nil {
			return res, nil
		}
		// Damaged: say so, drop it, and build it again.
		f.Log("cache: %v; rebuilding", err)
		if err := f.Cache.DropArtifact(key); err != nil {
			return nil, err
		}
	}
	res, err := f.produce(ctx, a, work)
	if err != nil {
		return nil, err
	}
	// The key was made from the inputs before the work read them: if they
	// changed meanwhile, the result belongs to neither version, and would
	// be stored under the old one's key.
	if after, _, err := f.key(a); err != nil || after != key {
		if err == nil {
			err = errors.New("its inputs changed while it was being built; run the build again")
		}
		return nil, err
	}
	return f.store(key, res, work)
}

// produce does the work of a's kind.
func (f *Fetcher) produce(ctx context.Context, a Artifact, work string) (*Result, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	switch {
	case a.Local != nil:
		return f.local(ctx, a, work)
	case a.URL != nil:
		return f.url(ctx, a, work)
	case a.Go != nil && a.Git != nil:
		return f.gitBuild(ctx, a, work)
	case a.Go != nil:
		return f.goBuild(ctx, a, a.Go.Module, work)
	}
	return nil, fmt.Errorf("no source given")
}

func (f *Fetcher) local(ctx context.Context, a Artifact, work string) (*Result, error) {
	l := a.Local
	info, err := os.Stat(l.Path)
	if err != nil {
		return nil, fmt.Errorf("local path: %w", err)
	}
	var rec Record
	if info.IsDir() {
		if l.Extract != nil {
			return nil, fmt.Errorf("%s is a directory; extract applies to archives", l.Path)
		}
		t, err := tree.FromDir(l.Path)
		if err != nil {
			return nil, err
		}
		if rec.SHA256, err = treeDigest(t, f.digest); err != nil {
			return nil, err
		}
		lic, err := findLicenses(t, a.Licenses, a.NoLicense)
		if err != nil {
			return nil, err
		}
		return &Result{Tree: t, Licenses: lic, Record: rec}, nil
	}
	sum, err := f.digest(l.Path)
	if err != nil {
		return nil, err
	}
	rec.SHA256 = sum
	ex := l.Extract
	// A local mode given an archive at build time unpacks it: that is what
	// "use this release tarball I patched" means.
	if ex == nil && a.Mode == "local" {
		if _, ok := archive.Detect(l.Path); ok {
			ex = &Extract{}
		}
	}
	t, lic, err := f.fileTree(ctx, a, l.Path, filepath.Base(l.Path), ex, work)
	if err != nil {
		return nil, err
	}
	return &Result{Tree: t, Licenses: lic, Record: rec}, nil
}

// licensePatterns find licence files near the top of an archive, whatever
// the include filter keeps.
var licensePatterns = []string{
	"LICENSE*", "LICENCE*", "COPYING*", "NOTICE*", "License*", "license*",
	"*/LICENSE*", "*/LICENCE*", "*/COPYING*", "*/NOTICE*", "*/License*", "*/license*",
}

// fileTree turns a file into a tree: unpacked if ex is set, else the file
// itself under name. Licence files of an archive are taken apart from the
// include filter so that shipping one binary still ships its licence.
func (f *Fetcher) fileTree(ctx context.Context, a Artifact, file, name string, ex *Extract, work string) (*tree.Tree, *tree.Tree, error) {
	if ex == nil {
		t, err := tree.FromFile(file, name)
		if err != nil {
			return nil, nil, err
		}
		lic, err := findLicenses(t, a.Licenses, a.NoLicense)
		return t, lic, err
	}
	format, ok := archive.Detect(name)
	if !ok {
		return nil, nil, fmt.Errorf("%s: extract is set but the name has no known archive extension (.tar, .tar.gz, .tgz, .tar.xz, .tar.zst, .zip)", name)
	}
	dir := filepath.Join(work, "tree")
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	opt := archive.Options{Strip: ex.Strip, Include: ex.Include}
	if len(ex.Include) > 0 {
		opt.Extra = licensePatterns
		opt.Extra = append(opt.Extra, a.Licenses...)
	}
	if err := archive.Extract(ctx, file, format, dir, opt); err != nil {
		return nil, nil, err
	}
	all, err := tree.FromDir(dir)
	if err != nil {
		return nil, nil, err
	}
	lic, err := findLicenses(all, a.Licenses, a.NoLicense)
	if err != nil {
		return nil, nil, err
	}
	if len(ex.Include) == 0 {
		return all, lic, nil
	}
	// Keep only what the include filter asked for in the artifact itself.
	t := tree.New()
	for _, e := range all.Entries() {
		if archive.Match(ex.Include, e.Path) {
			if err := t.Add(e); err != nil {
				return nil, nil, err
			}
		}
	}
	return t, lic, nil
}
