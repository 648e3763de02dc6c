package artifact

import (
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/regfile"
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
func (f *Fetcher) importedUp(walks []*moduleWalk, main string, packages []string) ([]*tree.Tree, error) {
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
	var queue []goFile
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
		for _, ip := range f.goSourceOf(src.path, src.st).imports {
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
func (w *moduleWalk) addUp(t *tree.Tree, dir, rel string) ([]goFile, error) {
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

// goSource is what importedUp reads of a Go file: the import paths of
// its import declarations.
type goSource struct {
	imports []string
}

// goSourceAt is a goSource, read when the file had the stamp st.
type goSourceAt struct {
	st  tree.Stamp
	src goSource
}

// goSourceOf is readGoSource of the Go file at p, whose stamp the walk
// took as st, once per stamp for f's build: a module with a link up has
// its Go files read for each of its keys (made before and after its
// build, for each platform), and a module of 100,000 files read them all
// again each time. A file changed since has another stamp. (One changed
// within its timestamps' granularity may keep its stamp, as its digest
// in the key does, which the memo keeps for the build on the same terms.)
func (f *Fetcher) goSourceOf(p string, st tree.Stamp) goSource {
	if f.goSources == nil || !st.Known() {
		return readGoSource(p)
	}
	if v, ok := f.goSources.Load(p); ok && v.(goSourceAt).st == st {
		return v.(goSourceAt).src
	}
	src := readGoSource(p)
	f.goSources.Store(p, goSourceAt{st, src})
	return src
}

// goSourceReadHook, set by tests, is called as the Go file at p is about
// to be read for its imports.
var goSourceReadHook func(p string)

// readGoSource reads the Go file at p as far as its imports. A file that
// cannot be read or parsed has none: the key has read it already, and go
// build says what is wrong with it.
func readGoSource(p string) goSource {
	if goSourceReadHook != nil {
		goSourceReadHook(p)
	}
	src, err := readImportSection(p)
	if err != nil {
		return goSource{}
	}
	file, _ := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly)
	if file == nil {
		return goSource{}
	}
	var out goSource
	for _, spec := range file.Imports {
		if ip, err := strconv.Unquote(spec.Path.Value); err == nil {
			out.imports = append(out.imports, ip)
		}
	}
	return out
}

// firstImportRead is how much of a Go file readImportSection reads
// first; it reads twice as much each time it finds it read too little.
const firstImportRead = 64 << 10

// readImportSection reads the Go file at p from its start through its
// import declarations, and as much more as it read at once. All that
// comes before them, comments and the package clause, is read, however
// long: the first megabyte only, as read before, gave no imports for a
// file behind a long licence or generated comment, and go build compiled
// packages through a link up that the key did not cover. It stops at
// the first token past the imports, so that a large file (generated
// tables) is not read whole; what a file holds is bounded by the key's
// walk, which counted its bytes before.
func readImportSection(p string) ([]byte, error) {
	f, err := regfile.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf []byte
	for want := firstImportRead; ; want *= 2 {
		if grow := want - len(buf); grow > 0 {
			buf = slices.Grow(buf, grow)
		}
		n, err := io.ReadFull(f, buf[len(buf):want])
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if end, ok := importsEnd(buf); ok {
			return buf[:end], nil
		}
	}
}

// importsEnd gives the offset in src, the start of a Go file, of the
// first token past its package clause and import declarations, if src
// holds one and all of it (the text "imp" at src's end may be the start
// of another import). A file that is no Go file ends where it goes wrong:
// go build refuses it, whatever it imports.
func importsEnd(src []byte) (int, bool) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	next := func() (int, token.Token, string) {
		pos, tok, lit := s.Scan()
		return file.Offset(pos), tok, lit
	}
	at, tok, lit := next()
	if tok == token.PACKAGE {
		_, tok, _ = next() // its name
		at, tok, lit = next()
		for tok == token.SEMICOLON {
			at, tok, lit = next()
		}
		for tok == token.IMPORT {
			at, tok, lit = next()
			if tok == token.LPAREN {
				for tok != token.RPAREN && tok != token.EOF {
					at, tok, lit = next()
				}
			} else {
				for tok != token.SEMICOLON && tok != token.EOF {
					at, tok, lit = next()
				}
			}
			for tok != token.EOF && (tok == token.SEMICOLON || tok == token.RPAREN) {
				at, tok, lit = next()
			}
		}
	}
	if tok == token.EOF {
		return 0, false
	}
	text := lit
	if text == "" {
		text = tok.String()
	}
	return at, at+len(text) < len(src)
}
