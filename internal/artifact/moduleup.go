package artifact

import (
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tree"
)

// upLink is a link in a module to a directory that holds the module: rel
// is its path in the module, path where it is on disk.
type upLink struct{ rel, path string }

// importedUp lists, for each of walks, the packages go build compiles
// through its links to directories that hold the module (nil where there
// are none), with what is below each package's directory (the files it
// may embed).
//
// go build follows such a link as any other (go 1.26, tried): in module
// example.com/app, up -> .. makes an import of example.com/app/up/lib
// compile ../lib. The key cannot read all that the link leads to (the
// module's parents, / at worst), and keyed only the link's target as
// written, so an edit in ../lib was served the binary first built. What
// go build compiles through the link is what the modules' Go files
// import through it, and what those packages import in turn: their
// imports are read here, build constraints aside (a superset of the
// files go build reads), and each package's directory is found as go
// build finds it, by its import path below the link. A package inside
// one of the modules is in the key already.
//
// go build also compiles the packages the recipe names, which nothing
// need import: packages ./up/tool, a path through the link (or a
// pattern, ./up/cmd/..., which go build matches through it), or its
// import path. Each is taken as an import of what it starts from.
func importedUp(walks []*moduleWalk, main string, packages []string) ([]*tree.Tree, error) {
	out := make([]*tree.Tree, len(walks))
	modPaths := make([]string, len(walks))
	up := false
	for i, w := range walks {
		if len(w.up) == 0 {
			continue
		}
		up = true
		out[i] = tree.New()
		// Without a module path, go build imports nothing through it.
		data, err := bounded.ReadFile(filepath.Join(w.root, "go.mod"), MaxGoMod)
		if err == nil {
			modPaths[i] = modfile.ModulePath(data)
		}
	}
	if !up {
		return out, nil
	}
	// Any module's files may import through any one's links: the main
	// module a package of one it replaces.
	var queue []string
	for _, w := range walks {
		queue = append(queue, w.goFiles...)
	}
	seen := map[string]bool{}
	// through adds the package of import path ip if it is through a
	// link up, and queues its Go files.
	through := func(ip string) error {
		for i, w := range walks {
			if modPaths[i] == "" {
				continue
			}
			// w.up grows as the packages found hold more such links.
			for j := 0; j < len(w.up); j++ {
				u := w.up[j]
				sub, ok := strings.CutPrefix(ip, path.Join(modPaths[i], u.rel))
				if !ok || sub != "" && sub[0] != '/' {
					continue
				}
				key := strconv.Itoa(i) + ":" + path.Join(u.rel, sub)
				if seen[key] {
					continue
				}
				seen[key] = true
				dir, err := filepath.EvalSymlinks(filepath.Join(u.path, filepath.FromSlash(sub)))
				if err != nil {
					continue // go build says that the package is not there
				}
				if info, err := os.Stat(dir); err != nil || !info.IsDir() || inAny(walks, dir) {
					continue
				}
				found, err := w.addUp(out[i], dir, path.Join(u.rel, sub))
				if err != nil {
					return fmt.Errorf("go module %s: package %s, imported through the link %s: %w", w.dir, ip, u.rel, err)
				}
				queue = append(queue, found...)
			}
		}
		return nil
	}
	for _, pkg := range packages {
		for _, ip := range packageImports(walks, modPaths, main, pkg) {
			if err := through(ip); err != nil {
				return nil, err
			}
		}
	}
	for len(queue) > 0 {
		src := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, ip := range importsOf(src) {
			if err := through(ip); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// packageImports gives the import paths go build resolves pkg, a
// package or pattern as the recipe names it, from: up to its first
// element holding "..." (all below it is read with it), and for a
// path, relative to main, the main module's directory, or absolute, the
// import path of each module it is in.
func packageImports(walks []*moduleWalk, modPaths []string, main, pkg string) []string {
	var lit []string
	for el := range strings.SplitSeq(pkg, "/") {
		if strings.Contains(el, "...") {
			break
		}
		lit = append(lit, el)
	}
	prefix := strings.Join(lit, "/")
	if !isPathPattern(pkg) {
		return []string{prefix}
	}
	p := filepath.FromSlash(prefix)
	if !filepath.IsAbs(p) {
		p = filepath.Join(main, p)
	}
	var out []string
	for i, w := range walks {
		if rel, err := filepath.Rel(w.dir, p); err == nil && filepath.IsLocal(rel) && modPaths[i] != "" {
			out = append(out, path.Join(modPaths[i], filepath.ToSlash(rel)))
		}
	}
	return out
}

// addUp adds to t the files under dir, named below rel, with w's budget
// and its record of the directories walked, and returns the Go files
// among them.
func (w *moduleWalk) addUp(t *tree.Tree, dir, rel string) ([]string, error) {
	main, goFiles := w.t, w.goFiles
	w.t, w.goFiles = t, nil
	defer func() { w.t, w.goFiles = main, goFiles }()
	if err := kernelMade(dir); err != nil {
		return nil, err
	}
	if err := w.add(dir, rel); err != nil {
		return nil, err
	}
	return w.goFiles, nil
}

// inAny says whether dir, resolved, is in one of the walks' modules.
func inAny(walks []*moduleWalk, dir string) bool {
	for _, w := range walks {
		if w.holds(dir) {
			return true
		}
	}
	return false
}

// maxImportsRead is how much of a Go file importsOf reads: its imports
// come first, after its package clause and comments.
const maxImportsRead = 1 << 20

// importsOf lists the import paths of the Go file at p. A file that
// cannot be read or parsed lists none: the key has read it already, and
// go build says what is wrong with it.
func importsOf(p string) []string {
	f, err := bounded.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if bounded.Regular(f) != nil {
		return nil
	}
	src, err := io.ReadAll(io.LimitReader(f, maxImportsRead))
	if err != nil {
		return nil
	}
	// A parse that fails past the imports (the file cut at
	// maxImportsRead) still gives them.
	file, _ := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly)
	if file == nil {
		return nil
	}
	var out []string
	for _, spec := range file.Imports {
		if ip, err := strconv.Unquote(spec.Path.Value); err == nil {
			out = append(out, ip)
		}
	}
	return out
}
