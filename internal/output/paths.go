package output

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds how many symlinks resolve follows, as the kernel does
// (ELOOP), so a link cycle is an error rather than a hang.
const maxLinks = 40

// resolve returns the absolute path that writing to p really replaces:
// every symlink on the way, the last component included, is followed as
// far as it exists. Outputs are written there so that a symlinked output
// stays a link (to the new content) instead of being replaced by it, and
// two spellings of one file compare equal.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	for range maxLinks {
		dir, err := resolveExisting(filepath.Dir(abs))
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		abs = filepath.Join(dir, filepath.Base(abs))
		fi, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			return abs, nil
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return abs, nil
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		abs = filepath.Clean(target)
	}
	return "", fmt.Errorf("resolve %s: more than %d symbolic links", p, maxLinks)
}

// resolveExisting follows the symlinks of the part of dir that exists and
// keeps the rest (directories a write would create) as written.
func resolveExisting(dir string) (string, error) {
	r, err := filepath.EvalSymlinks(dir)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	parent := filepath.Dir(dir)
	if parent == dir {
		return dir, nil
	}
	rp, err := resolveExisting(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(rp, filepath.Base(dir)), nil
}

// stdoutKey stands for standard output among the paths CheckDistinct
// compares; it cannot be an absolute path.
const stdoutKey = "-"

// place is what one output or file occupies on disk.
type place struct {
	name string // as the user wrote it: "oci:out", "record out/r.json"
	path string // resolved; stdoutKey for standard output
	tree bool   // the whole directory is replaced, so nothing else may live inside
}

// CheckDistinct refuses outputs that would overwrite each other or another
// file pallet writes in the same build (extra: the build record): two
// outputs on one path, an output and an extra file on one path, or
// anything inside an oci:DIR output, which is replaced whole. Paths are
// compared absolute and cleaned, with symlinks resolved where they exist,
// so out, ./out and a link to out are one path. At most one output may
// write to standard output. Registry outputs have no path and are not
// compared. Call it before any work.
func CheckDistinct(targets []Target, extra ...string) error {
	places, err := placesOf(targets, extra)
	if err != nil {
		return err
	}
	for i, a := range places {
		for _, b := range places[i+1:] {
			if err := clash(a, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// placesOf is where targets and the extra files lie, resolved.
func placesOf(targets []Target, extra []string) ([]place, error) {
	var places []place
	for _, t := range targets {
		var p place
		switch t := t.(type) {
		case *Layout:
			p = place{name: t.String(), path: t.Dir, tree: true}
		case *DockerArchive:
			if t.Writer != nil {
				places = append(places, place{name: t.String(), path: stdoutKey})
				continue
			}
			p = place{name: t.String(), path: t.File}
		default:
			continue
		}
		r, err := resolve(p.path)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", p.name, err)
		}
		p.path = r
		places = append(places, p)
	}
	for _, e := range extra {
		r, err := resolve(e)
		if err != nil {
			return nil, err
		}
		places = append(places, place{name: e, path: r})
	}
	return places, nil
}

// Input is a path the build reads: its recipe, a local artifact, an
// oci: base, its cache.
type Input struct {
	// Name says what it is, as the user knows it: "the recipe",
	// "artifact agent (pallet.yaml:12)".
	Name string
	Path string
	// Ignores, when set, says that a path inside the input is left out
	// of what the build reads (a .dockerignore'd output directory).
	Ignores func(path string) bool
}

// CheckInputs refuses an output, or a file pallet writes (extra), that
// would change what the build reads: one on an input's path (a record
// written over the recipe, a layout over its own base), one inside an
// input directory (the next build would pack it into its image, and its
// digest would change with every build), or an oci:DIR output holding an
// input, which replacing the directory would destroy. Inputs that do not
// exist are left to the build to report. Call it before any work.
func CheckInputs(targets []Target, extra []string, inputs []Input) error {
	places, err := placesOf(targets, extra)
	if err != nil {
		return err
	}
	for _, in := range inputs {
		if _, err := os.Lstat(in.Path); err != nil {
			continue
		}
		r, err := resolve(in.Path)
		if err != nil {
			continue
		}
		for _, pl := range places {
			switch {
			case pl.path == stdoutKey:
			case pl.path == r:
				return fmt.Errorf("%s is %s (%s): writing it would destroy what the build reads; give it another path", pl.name, in.Name, r)
			case within(r, pl.path) && (in.Ignores == nil || !in.Ignores(pl.path)):
				return fmt.Errorf("%s is inside %s (%s): the next build would read it back; put it elsewhere (-o, --record, --metadata-file, --sbom-dir, --cache-dir)", pl.name, in.Name, r)
			case pl.tree && within(pl.path, r):
				return fmt.Errorf("%s (%s) is inside output %s, which is replaced whole on every build; put the output elsewhere", in.Name, r, pl.name)
			}
		}
	}
	return nil
}

func clash(a, b place) error {
	if a.path == b.path {
		if a.path == stdoutKey {
			return fmt.Errorf("outputs %s and %s both write to standard output; keep one", a.name, b.name)
		}
		return fmt.Errorf("%s and %s are the same path %s: one would overwrite the other; give each its own path", a.name, b.name, a.path)
	}
	for _, o := range [][2]place{{a, b}, {b, a}} {
		outer, inner := o[0], o[1]
		if outer.tree && inner.path != stdoutKey && within(outer.path, inner.path) {
			return fmt.Errorf("%s is inside output %s (%s), which is replaced whole on every build; put it elsewhere", inner.name, outer.name, outer.path)
		}
	}
	return nil
}

// within says whether p lies strictly under dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
