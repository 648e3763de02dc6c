package artifact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/suggest"
	"github.com/pallet-dev/pallet/internal/tree"
)

// GitFiles takes a file or a directory of a git repository pinned by
// commit, as it is: scripts, configuration, units that upstream keeps
// beside its code.
type GitFiles struct {
	Repo   string
	Commit string
	// Tag, when given, must point at Commit.
	Tag string
	// Path names the file or directory, slash-separated, relative to the
	// repository's root (CleanRepoPath).
	Path string
}

func (g *GitFiles) Name() string { return "git-files" }

// Origin shows the repository as Git's does.
func (g *GitFiles) Origin() Origin {
	return Origin{Repo: ShownURL(g.Repo), Commit: g.Commit, Tag: g.Tag, GitPath: g.Path}
}

func (g *GitFiles) ref() gitRef { return gitRef{Repo: g.Repo, Commit: g.Commit, Tag: g.Tag} }

// Key: the commit pins every byte of the checkout, and the path says
// which of them are taken; the repository is there as Git's Key has it.
func (g *GitFiles) Key(*Fetcher, *Request) ([]string, bool, error) {
	return []string{ShownURL(g.Repo), g.Commit, g.Tag, g.Path}, true, nil
}

// Mirror keeps a bare copy of the repository holding the commit: the
// files need nothing else. The tag is proven in the copy, as a Go
// build's mirror proves it in its checkout from there: pallet fetch
// says a tag moved since the pin at once, not the offline build after.
func (g *GitFiles) Mirror(ctx context.Context, f *Fetcher, _ *Request, dir string) error {
	if err := f.mirrorRepo(ctx, dir, g.ref()); err != nil {
		return err
	}
	return checkTag(ctx, f.Limits, "", MirrorRepo(dir, g.Repo), g.ref())
}

// Produce checks out the pinned commit and takes Path from it.
func (g *GitFiles) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	src := filepath.Join(work, "src")
	if err := f.checkout(ctx, g.ref(), src); err != nil {
		return nil, err
	}
	at := fmt.Sprintf("%s at %s", ShownURL(g.Repo), g.Commit)
	files, subs, err := trackedFiles(ctx, src, g.Path)
	if err != nil {
		return nil, err
	}
	// A submodule's directory is empty in the checkout: taken, it would
	// place nothing where the recipe expects its files.
	if len(subs) > 0 {
		return nil, blame("path", fmt.Errorf("%s: %s is a git submodule, whose files pallet does not fetch; take them from its own repository, as another artifact", at, subs[0]))
	}
	if err := refuseLFSPointers(ctx, src, files, at); err != nil {
		return nil, err
	}
	// What .git holds is the clone's, not the commit's: no path may
	// take it, "." included.
	if err := os.RemoveAll(filepath.Join(src, ".git")); err != nil {
		return nil, err
	}
	return takeWithLicenses(src, g.Path, r, at, "at that commit")
}

// lfsPointerPrefixes begin a Git LFS pointer file (the spec's, and the
// one before the project was renamed); a pointer is smaller than 1024
// bytes.
var lfsPointerPrefixes = []string{"version https://git-lfs.github.com/spec/", "version https://hawser.github.com/spec/"}

const maxLFSPointer = 1024

// refuseLFSPointers refuses the files (trackedFiles) of the checkout at src
// that the repository's .gitattributes keep in Git LFS (filter=lfs)
// and that hold the pointer git committed in their place: pallet runs
// no filter, so the checkout holds the pointer, which taken would be
// placed where the recipe expects the file (an installer, an icon),
// with nothing said. A file under filter=lfs committed before it was
// (no pointer) is the file itself, and is taken.
func refuseLFSPointers(ctx context.Context, src string, files []string, at string) error {
	if len(files) == 0 {
		return nil
	}
	attrs, err := gitOutput(ctx, src, strings.NewReader(strings.Join(files, "\x00")+"\x00"), "check-attr", "--stdin", "-z", "filter")
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	// <path> NUL <attribute> NUL <value> NUL, for each path.
	fields := strings.Split(attrs, "\x00")
	var pointers []string
	for i := 0; i+2 < len(fields); i += 3 {
		name, value := fields[i], fields[i+2]
		if value != "lfs" {
			continue
		}
		if ok, err := isLFSPointer(filepath.Join(src, filepath.FromSlash(name))); err != nil {
			return err
		} else if ok {
			pointers = append(pointers, name)
		}
	}
	if len(pointers) == 0 {
		return nil
	}
	more := ""
	if len(pointers) > 3 {
		more = fmt.Sprintf(" and %d more", len(pointers)-3)
	}
	return blame("path", fmt.Errorf("%s: %s%s: kept in Git LFS (.gitattributes: filter=lfs), whose files pallet does not fetch: the commit holds only their pointers; take the files from a release download, as another artifact, or leave them out of the path", at, strings.Join(pointers[:min(len(pointers), 3)], ", "), more))
}

// isLFSPointer says whether the checked-out file at name is a Git LFS
// pointer; a symlink is not.
func isLFSPointer(name string) (bool, error) {
	info, err := os.Lstat(name)
	if err != nil || !info.Mode().IsRegular() || info.Size() >= maxLFSPointer {
		return false, err
	}
	b, err := bounded.ReadFile(name, maxLFSPointer)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(lfsPointerPrefixes, func(prefix string) bool { return bytes.HasPrefix(b, []byte(prefix)) }), nil
}

// takeWithLicenses is the result of taking the file or directory p of the
// pinned source unpacked at src (takeFiles) with its licences
// (sourceLicenses).
func takeWithLicenses(src, p string, r *Request, at, where string) (*Result, error) {
	t, err := takeFiles(src, p, at, where)
	if err != nil {
		return nil, err
	}
	lic, err := sourceLicenses(src, t, r, at)
	if err != nil {
		return nil, err
	}
	return &Result{Tree: t, Licenses: lic}, nil
}

// takeFiles takes the file or directory p of root, a pinned source
// unpacked (a checkout, a module), as it is; at names the source and its
// pin, and where says where p was looked for ("at that commit"), in
// messages. Errors in p are blamed on the recipe's path.
func takeFiles(root, p, at, where string) (*tree.Tree, error) {
	full, info, err := inCheckout(root, p, where)
	if err != nil {
		return nil, blame("path", fmt.Errorf("%s: %w", at, err))
	}
	var t *tree.Tree
	switch {
	case info.IsDir():
		if t, err = tree.FromDir(full); err != nil {
			return nil, err
		}
		// Refused, not dropped as a Go build's checkout drops them: these
		// links are placed, and in the image one leading out of the
		// directory points at whatever is there (the host, in a
		// host-process container), which the pin does not cover. It is
		// a local directory's rule, for the same reason.
		for e := range t.All() {
			if e.Kind != tree.Symlink {
				continue
			}
			if err := archive.CheckLinkTarget(e.Link, e.Path); err != nil {
				return nil, blame("path", fmt.Errorf("%s: %s: %w (take the directory that holds its target, or the target itself)", at, path.Join(p, e.Path), err))
			}
		}
	case info.Mode().IsRegular():
		if t, err = tree.FromFile(full, path.Base(p)); err != nil {
			return nil, err
		}
	default:
		return nil, blame("path", fmt.Errorf("%s: %w", at, tree.Unplaceable(p, info.Mode())))
	}
	return t, nil
}

// sourceLicenses are those of the source unpacked at src (a repository,
// a module) that files t were taken from, as for a Go build of it: named
// ones are relative to its root, where a licence is kept whatever part of
// it is taken; found ones are those of the files taken, or else the
// root's. at names the source and its pin in messages.
func sourceLicenses(src string, t *tree.Tree, r *Request, at string) (*tree.Tree, error) {
	if r.NoLicense {
		return tree.New(), nil
	}
	if len(r.Licenses) == 0 {
		lic, err := findLicenses(t, nil, false)
		if err != nil || lic.Len() > 0 {
			return lic, err
		}
		return findLicenses(shallowTree(src), nil, false)
	}
	out := tree.New()
	for _, n := range r.Licenses {
		file := func(p string) bool {
			_, info, err := inCheckout(src, p, "")
			return err == nil && info.Mode().IsRegular()
		}
		p, err := tree.UserPath(n, file)
		if errors.Is(err, tree.ErrAmbiguousPath) {
			return nil, blame("licenses", fmt.Errorf("licence %w", err))
		}
		if err != nil {
			return nil, fmt.Errorf("licence %q: %w", n, err)
		}
		full, info, err := inCheckout(src, p, "")
		if err != nil || !info.Mode().IsRegular() {
			return nil, fmt.Errorf("licence file %s not found in %s", n, at)
		}
		one, err := tree.FromFile(full, p)
		if err != nil {
			return nil, err
		}
		for e := range one.All() {
			if err := out.Add(e); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// inCheckout finds p in root, a pinned source unpacked (a checkout, a
// module), following symlinks only while they stay in it: a link on the
// way that leads out would take files the pin does not cover. It returns
// the path on disk, links resolved. where says where p was looked for
// ("at that commit"), when it is not there; the message then names what
// is near it (nearIn).
func inCheckout(root, p, where string) (string, fs.FileInfo, error) {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return "", nil, err
	}
	defer rt.Close()
	info, err := rt.Stat(filepath.FromSlash(p))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return "", nil, fmt.Errorf("no file or directory %s %s%s", p, where, nearIn(rt, p))
	case err != nil:
		return "", nil, fmt.Errorf("%s: %w (a symlink on the way leads out of it)", p, errors.Unwrap(err))
	}
	full, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		return "", nil, err
	}
	return full, info, nil
}

// nearIn names what a path p that is not in rt was likely meant for: the
// names in the deepest directory of p's that is there, those closest to
// the part of p missing from it first ("hack/windws": hack/windows,
// hack/linux). Empty when that directory holds nothing.
func nearIn(rt *os.Root, p string) string {
	const most = 4
	dir, missing := ".", p
	for parts := strings.Split(p, "/"); len(parts) > 1; parts = parts[:len(parts)-1] {
		d := path.Join(parts[:len(parts)-1]...)
		if info, err := rt.Stat(filepath.FromSlash(d)); err == nil && info.IsDir() {
			dir, missing = d, parts[len(parts)-1]
			break
		}
	}
	f, err := rt.Open(filepath.FromSlash(dir))
	if err != nil {
		return ""
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil || len(names) == 0 {
		return ""
	}
	dist := make(map[string]int, len(names))
	for _, n := range names {
		dist[n] = suggest.Distance(strings.ToLower(n), strings.ToLower(missing))
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := dist[a] - dist[b]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	more := ""
	if len(names) > most {
		names, more = names[:most], ", ..."
	}
	for i, n := range names {
		names[i] = path.Join(dir, n)
	}
	return " (nearest: " + strings.Join(names, ", ") + more + ")"
}

// CleanRepoPath checks a path into a repository as a recipe gives it
// (slash-separated, relative to the repository's root, never climbing out
// of it) and returns it cleaned; "." is the whole repository.
func CleanRepoPath(p string) (string, error) { return cleanPathIn(p, "repository") }

// CleanModulePath checks a path into a module as a recipe gives it, as
// CleanRepoPath does a path into a repository.
func CleanModulePath(p string) (string, error) { return cleanPathIn(p, "module") }

// cleanPathIn checks a path relative to the root of what (a repository, a
// module).
func cleanPathIn(p, what string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty path")
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "":
		return "", fmt.Errorf("path %q is absolute; name it relative to the %s's root", p, what)
	case strings.Contains(p, `\`):
		return "", fmt.Errorf("path %q: separate its parts with /", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q climbs out of the %s (contains ..)", p, what)
		}
	}
	return path.Clean(p), nil
}
