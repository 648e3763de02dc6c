package artifact

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/tree"
)

// CLicenseDir is where the copyright file of the Debian package pkg, which
// owns a C library a cgo binary links, goes under /LICENSES/<artifact>/:
// beside the modules' directories, under a name no module path takes
// (a module path's first element has a dot).
func CLicenseDir(pkg string) string { return "debian/" + pkg }

// cLibraries finds what the binaries of a cgo build (t, its output) link
// of C libraries, the Debian packages owning them and their copyright
// files, copied into work: the result keeps them, so that a build taken
// from the cache ships and records the same, whatever the build machine
// holds by then. Nothing for a build without cgo, or whose packages use
// none: go list is run only for a cgo build.
func (f *Fetcher) cLibraries(ctx context.Context, g *Go, run goRun, env []string, t *tree.Tree) ([]clibs.Binary, *tree.Tree, error) {
	if !g.cgoOn() || len(run.list) == 0 {
		return nil, nil, nil
	}
	bins := map[string]string{}
	for _, e := range t.Entries() {
		if e.Kind == tree.File {
			bins[e.Path] = e.Source
		}
	}
	found, err := clibs.Find(ctx, clibs.Build{Dir: cmp.Or(run.listDir, run.dir), Env: env, Packages: run.list, Tags: g.Tags, Flags: append(slices.Clip(run.listFlags), g.Flags...), Ldflags: g.Ldflags, Command: Command}, bins)
	if err != nil {
		return nil, nil, fmt.Errorf("the C libraries its cgo binaries link: %w", err)
	}
	// An archive in the module's own source is under its licence, as its
	// C code is: not the distribution's to credit.
	module, err := filepath.EvalSymlinks(run.licenses)
	if err != nil {
		return nil, nil, err
	}
	var files []string
	for i := range found {
		for j := range found[i].Libraries {
			l := &found[i].Libraries[j]
			if l.File == "" {
				continue // not found: said by the build
			}
			if rel, err := filepath.Rel(module, l.File); err == nil && filepath.IsLocal(rel) {
				// By its path in the module, as the record names what
				// is taken from a module: the work directory it was
				// built in is gone once the result is cached, and is
				// another on another machine.
				l.InModule, l.File = true, filepath.ToSlash(rel)
				continue
			}
			files = append(files, l.File)
		}
		for _, l := range found[i].Shared {
			files = append(files, l.File)
		}
	}
	if len(files) == 0 {
		return found, nil, nil
	}
	owners, err := f.Dpkg.Owners(files)
	if err != nil {
		return nil, nil, err
	}
	// What a dynamic binary was linked against is known by its package,
	// for a cached result to be refused once it changes; it is not in the
	// binary, so not credited.
	for i := range found {
		for j := range found[i].Shared {
			found[i].Shared[j].Package = owners[found[i].Shared[j].File]
		}
	}
	// A file no package owns has no version to tell it changed: its
	// digest does, for a cached result to be refused once it has.
	for i := range found {
		for _, ls := range [][]clibs.Library{found[i].Libraries, found[i].Shared} {
			for j := range ls {
				l := &ls[j]
				if _, owned := owners[l.File]; owned || l.InModule || l.File == "" {
					continue
				}
				if l.SHA256, err = clibs.FileDigest(l.File); err != nil {
					return nil, nil, fmt.Errorf("the C library %s: %w", l.File, err)
				}
			}
		}
	}
	lic := tree.New()
	dir := filepath.Join(run.work, "clibs")
	for i := range found {
		for j := range found[i].Libraries {
			l := &found[i].Libraries[j]
			p, ok := owners[l.File]
			if !ok || l.InModule {
				continue // said by the build, with the recipe's line
			}
			l.Package = p
			rel := CLicenseDir(p.Name) + "/copyright"
			if _, dup := lic.Get(rel); dup {
				l.Copyright = rel
				continue
			}
			text, err := f.Dpkg.Copyright(p.Name)
			if err != nil {
				return nil, nil, fmt.Errorf("the copyright file of %s, which owns %s: %w", p.Name, l.File, err)
			}
			if text == nil {
				continue
			}
			dst := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(dst, text, 0o644); err != nil {
				return nil, nil, err
			}
			if err := lic.Add(tree.Entry{Path: rel, Kind: tree.File, Mode: 0o644, Source: dst, Size: int64(len(text))}); err != nil {
				return nil, nil, err
			}
			l.Copyright = rel
		}
	}
	slices.SortFunc(found, func(a, b clibs.Binary) int { return strings.Compare(a.Path, b.Path) })
	return found, lic, nil
}
