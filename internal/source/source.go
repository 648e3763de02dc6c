// Package source obtains artifacts: it turns one artifact, for one
// platform, into a file tree on disk. Each kind (local path, pinned
// download, Go build) is a small function; the plan decides which to call.
package source

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Artifact is a fully expanded request for one artifact on one platform.
// Exactly one of Local, URL and Go is set.
type Artifact struct {
	Name     string
	Platform platform.Platform
	Local    *Local
	URL      *URL
	Go       *Go
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

// Go builds packages of a local module.
type Go struct {
	Module   string // absolute directory
	Packages []string
	Ldflags  []string
	Tags     []string
	Flags    []string
	Env      []string
	CGO      bool
	Trimpath bool
}

// Extract asks for an archive to be unpacked.
type Extract struct {
	Strip   int
	Include []string
}

// Result is what an artifact produced.
type Result struct {
	Tree   *tree.Tree
	Record Record
}

// Record describes where an artifact came from, for logs and the build record.
type Record struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Platform string `json:"platform"`
	URL      string `json:"url,omitempty"`
	Path     string `json:"path,omitempty"`
	// SHA256 is the digest of what was fetched or taken (the download, or
	// a local file); empty for directories and builds.
	SHA256 string `json:"sha256,omitempty"`
}

// Fetcher obtains artifacts. Its zero value is not usable; use New.
type Fetcher struct {
	Client *http.Client
	// Retries is how many times a failed download is tried again.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// Log receives one line per notable event (retries).
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

// Fetch produces a's tree under work, a directory owned by this call.
func (f *Fetcher) Fetch(ctx context.Context, a Artifact, work string) (*Result, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	var (
		res *Result
		err error
	)
	switch {
	case a.Local != nil:
		res, err = f.local(ctx, a, work)
	case a.URL != nil:
		res, err = f.url(ctx, a, work)
	case a.Go != nil:
		res, err = f.goBuild(ctx, a, work)
	default:
		err = fmt.Errorf("no source given")
	}
	if err != nil {
		return nil, fmt.Errorf("artifact %s (%s): %w", a.Name, a.Platform, err)
	}
	res.Record.Name = a.Name
	res.Record.Platform = a.Platform.String()
	return res, nil
}

func (f *Fetcher) local(ctx context.Context, a Artifact, work string) (*Result, error) {
	l := a.Local
	info, err := os.Stat(l.Path)
	if err != nil {
		return nil, fmt.Errorf("local path: %w", err)
	}
	rec := Record{Kind: "local", Path: l.Path}
	if info.IsDir() {
		if l.Extract != nil {
			return nil, fmt.Errorf("%s is a directory; extract applies to archives", l.Path)
		}
		t, err := tree.FromDir(l.Path)
		if err != nil {
			return nil, err
		}
		return &Result{Tree: t, Record: rec}, nil
	}
	sum, err := fileSHA256(l.Path)
	if err != nil {
		return nil, err
	}
	rec.SHA256 = sum
	t, err := fileTree(ctx, l.Path, filepath.Base(l.Path), l.Extract, work)
	if err != nil {
		return nil, err
	}
	return &Result{Tree: t, Record: rec}, nil
}

// fileTree turns a file into a tree: unpacked if extract is set, else the
// file itself under name.
func fileTree(ctx context.Context, file, name string, ex *Extract, work string) (*tree.Tree, error) {
	if ex == nil {
		return tree.FromFile(file, name)
	}
	format, ok := archive.Detect(name)
	if !ok {
		return nil, fmt.Errorf("%s: extract is set but the name has no known archive extension (.tar, .tar.gz, .tgz, .tar.xz, .tar.zst, .zip)", name)
	}
	dir := filepath.Join(work, "tree")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := archive.Extract(ctx, file, format, dir, archive.Options{Strip: ex.Strip, Include: ex.Include}); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return tree.FromDir(dir)
}
