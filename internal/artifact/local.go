package artifact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Local takes a file, a directory or an archive from disk.
type Local struct {
	// Path is absolute.
	Path string
	// Extract, when set, unpacks the file as an archive. A local file is
	// placed as it is otherwise, whatever its name.
	Extract *Extract
	// KeepLinks keeps a directory's symlinks that are absolute or point
	// out of it; by default they are refused, as in archives: in a
	// host-process container a rooted link points at the host.
	KeepLinks bool
	// Filename, when set, names a file placed as it is (not extracted)
	// in the tree, instead of its own name; an archive that is
	// extracted keeps its entries' names.
	Filename string
}

// Extract asks for an archive to be unpacked.
type Extract struct {
	Strip   int
	Include []string
	// RootedLinks keeps the archive's absolute symlinks, as links from
	// the image's root (archive.Options.RootedLinks), as a Dockerfile's
	// ADD unpacks them.
	RootedLinks bool
	// Headers keeps the modes and owners of the archive's tar headers
	// (tree.Entry.Archived), for a placement that gives them (a
	// Dockerfile's ADD: tree.Placement.KeepArchiveModes).
	Headers bool
}

func (l *Local) Name() string { return "local" }

func (l *Local) Origin() Origin { return Origin{Path: l.Path} }

func (l *Local) Mirror(context.Context, *Fetcher, *Request, string) error { return nil }

// Key caches only an archive's extraction: plain files and directories are
// read where they are.
func (l *Local) Key(f *Fetcher, _ *Request) ([]string, bool, error) {
	if l.Extract == nil {
		return nil, false, nil
	}
	info, err := os.Stat(l.Path)
	if err != nil || !info.Mode().IsRegular() {
		return nil, false, nil // Produce says what is wrong
	}
	sum, err := f.digest(l.Path, tree.Stamp{})
	if err != nil {
		return nil, false, err
	}
	return []string{sum, filepath.Base(l.Path), l.Extract.key()}, true, nil
}

func (l *Local) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	// Resolved before it is stated, and stated where it leads, which is
	// what a directory's walk reads: a link stated, then resolved, may
	// be switched between from a directory to a file, which the walk
	// (tree.FromDir) refuses as a root, when the stat said a directory.
	// What EvalSymlinks cannot resolve is stated as
	// given, as before: stat says a missing path of the path given, not
	// of its first element missing, and follows a link of /proc whose
	// target no path names (/dev/fd/3, a pipe: refused below).
	root, resolveErr := filepath.EvalSymlinks(l.Path)
	if resolveErr != nil {
		root = l.Path
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, blame("path", fmt.Errorf("local path: %w", err))
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return nil, blame("path", fmt.Errorf("local path: %w", tree.Unplaceable(l.Path, info.Mode())))
	}
	var rec Record
	if info.IsDir() {
		if l.Extract != nil {
			return nil, fmt.Errorf("%s is a directory; extract applies to archives", l.Path)
		}
		if l.Filename != "" {
			return nil, fmt.Errorf("%s is a directory; filename names a file", l.Path)
		}
		// A link to a directory is followed (root), as a link to a
		// file is and as the up-to-date note stamps it: tree.FromDir
		// takes no link for its root (it gave an empty tree, and the
		// artifact placed nothing, saying so nowhere).
		if resolveErr != nil {
			return nil, blame("path", fmt.Errorf("local path: %w", resolveErr))
		}
		t, err := tree.FromDir(root)
		if err != nil {
			return nil, err
		}
		if !l.KeepLinks {
			for e := range t.All() {
				if e.Kind != tree.Symlink {
					continue
				}
				if err := archive.CheckLinkTarget(e.Link, e.Path); err != nil {
					return nil, fmt.Errorf("%s: %s: %w (set links: keep on the local section to keep it)", l.Path, e.Path, err)
				}
			}
		}
		if rec.Digest, err = tree.Digest(t, f.digest); err != nil {
			return nil, err
		}
		lic, err := findLicenses(t, r.Licenses, r.NoLicense)
		if err != nil {
			return nil, err
		}
		return &Result{Tree: t, Licenses: lic, Record: rec}, nil
	}
	if rec.Digest, err = f.digest(l.Path, tree.Stamp{}); err != nil {
		return nil, err
	}
	name := filepath.Base(l.Path)
	if l.Filename != "" && l.Extract == nil {
		// Only a file placed as it is is renamed: an archive given at
		// build time to a mode that names one is unpacked, and its name
		// says its format.
		name = l.Filename
	}
	t, lic, err := f.fileTree(ctx, r, l.Path, name, l.Path, l.Extract, work, &rec)
	if err != nil {
		return nil, err
	}
	return &Result{Tree: t, Licenses: lic, Record: rec}, nil
}

// LocalArchive is the Local a --mode NAME=local:PATH override makes: an
// archive given at build time is unpacked, since "use this release tarball
// I patched" means its contents, while any other file or directory is
// taken as it is.
func LocalArchive(path string, ex *Extract) *Local {
	if ex == nil {
		if _, ok := archive.Detect(path); ok {
			if info, err := os.Stat(path); err == nil && !info.IsDir() {
				ex = &Extract{}
			}
		}
	}
	return &Local{Path: path, Extract: ex}
}
