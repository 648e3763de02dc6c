package artifact

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
)

// URL downloads a file pinned by its sha256, unpacked or placed as it is.
type URL struct {
	URL    string
	SHA256 string
	// Filename names the file in the tree; the last element of the URL
	// path by default.
	Filename string
	Extract  *Extract
}

func (u *URL) Name() string { return "url" }

// Origin shows the URL without a password written into it: records and
// SBOMs are shared, credentials are not.
func (u *URL) Origin() Origin { return Origin{URL: ShownURL(u.URL), SHA256: u.SHA256} }

// Key: the content is the pin's, whatever URL serves it; the URL is kept
// so that a recipe pointing elsewhere is rebuilt and its record is right.
func (u *URL) Key(*Fetcher, *Request) ([]string, bool, error) {
	// As the record shows it (ShownURL): a token handed to each CI job
	// fetches the same bytes, which the next job should find cached.
	return []string{u.SHA256, u.Filename, ShownURL(u.URL), u.Extract.key()}, true, nil
}

func (u *URL) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	name := u.Filename
	if name == "" {
		pu, err := url.Parse(u.URL)
		if err != nil {
			return nil, err
		}
		name = path.Base(pu.Path)
		// %2e%2e decodes to "..": refused later as leaving the tree,
		// which would not say where the name came from.
		if name == "/" || name == "." || name == ".." {
			return nil, fmt.Errorf("%s: cannot name the file from the URL; set filename", u.URL)
		}
	}
	file := filepath.Join(work, "download")
	if err := f.Get(ctx, u.URL, u.SHA256, file); err != nil {
		return nil, err
	}
	var rec Record
	t, lic, err := f.fileTree(ctx, r, file, name, ShownURL(u.URL), u.Extract, work, &rec)
	if err != nil {
		return nil, err
	}
	return &Result{Tree: t, Licenses: lic, Record: rec}, nil
}

// Mirror keeps the download under sha256/<digest>, verified.
func (u *URL) Mirror(ctx context.Context, f *Fetcher, _ *Request, dir string) error {
	dst := mirrorBlob(dir, u.SHA256)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(dst); err == nil {
		// Already mirrored; verify rather than trust it.
		if err := copyVerified(dst, u.SHA256, "", f.Limits.Limits.WithDefaults().MaxBytes); err == nil {
			return nil
		}
	}
	f.Log("mirror %s", u.URL)
	return f.Download(ctx, u.URL, u.SHA256, dst)
}
