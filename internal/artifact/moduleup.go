package artifact

import (
	"fmt"
	"go/ast"
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
//
// headers lists, for each walk, the C headers outside the modules that
// the cgo preambles of its Go files, and of the packages found, include
// (see cgoHeaders): up/inc/x.h, through the link, was not in the key,
// and an edit of it was served the binary first built. nil where there
// are none, so that keys without them are as they were.
func (f *Fetcher) importedUp(walks []*moduleWalk, main string, packages []string) (out, headers []*tree.Tree, err error) {
	out = make([]*tree.Tree, len(walks))
	headers = make([]*tree.Tree, len(walks))
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
		return out, headers, nil
	}
	// Any module's files may import through any one's links: the main
	// module a package of one it replaces. Each is queued with the walk
	// it was found by.
	type queued struct {
		goFile
		walk int
	}
	var queue []queued
	for i, w := range walks {
		for _, g := range w.goFiles {
			queue = append(queue, queued{g, i})
		}
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
				for _, g := range found {
					queue = append(queue, queued{g, i})
				}
			}
		}
		return nil
	}
	for _, pkg := range packages {
		for _, ip := range packageImports(walks, modPaths, main, pkg) {
			if err := through(ip); err != nil {
				return nil, nil, err
			}
		}
	}
	included := map[string]bool{}
	for len(queue) > 0 {
		src := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		gs := f.goSourceOf(src.path, src.st)
		for _, ip := range gs.imports {
			if err := through(ip); err != nil {
				return nil, nil, err
			}
		}
		if gs.cgo != nil {
			if err := f.cgoHeaders(walks, src.walk, &headers[src.walk], src.path, gs.cgo, included); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, headers, nil
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
// its import declarations, and, if it imports "C", what its preamble
// says of C headers. Of a C header it is the headers it includes.
type goSource struct {
	imports []string
	cgo     *cgoPreamble
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
	return f.sourceOf(p, st, readGoSource)
}

// sourceOf is goSourceOf with read (readGoSource, headerSource) as what
// reads the file.
func (f *Fetcher) sourceOf(p string, st tree.Stamp, read func(string) goSource) goSource {
	if f.goSources == nil || !st.Known() {
		return read(p)
	}
	if v, ok := f.goSources.Load(p); ok && v.(goSourceAt).st == st {
		return v.(goSourceAt).src
	}
	src := read(p)
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
	file, _ := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly|parser.ParseComments)
	if file == nil {
		return goSource{}
	}
	var out goSource
	for _, spec := range file.Imports {
		if ip, err := strconv.Unquote(spec.Path.Value); err == nil {
			out.imports = append(out.imports, ip)
		}
	}
	// The preamble is the comment just before import "C", as cgo reads
	// it: the spec's, or the declaration's when it is not in parentheses.
	for _, d := range file.Decls {
		d, ok := d.(*ast.GenDecl)
		if !ok || d.Tok != token.IMPORT {
			continue
		}
		for _, spec := range d.Specs {
			spec := spec.(*ast.ImportSpec)
			if spec.Path.Value != `"C"` {
				continue
			}
			doc := spec.Doc
			if doc == nil && !d.Lparen.IsValid() {
				doc = d.Doc
			}
			pre := parsePreamble(filepath.Dir(p), doc.Text())
			if out.cgo == nil {
				out.cgo = &cgoPreamble{}
			}
			out.cgo.includes = append(out.cgo.includes, pre.includes...)
			out.cgo.quoteDirs = append(out.cgo.quoteDirs, pre.quoteDirs...)
			out.cgo.dirs = append(out.cgo.dirs, pre.dirs...)
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
		next() // its name
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

// cgoPreamble is what a cgo file's preamble says of the headers its C
// compiles read: those it includes, and the directories its #cgo flags
// have the compiler search (-I, -iquote, -isystem, -idirafter), where
// they are relative to the package's directory or ${SRCDIR}. Directories
// given as absolute paths are the build machine's (/usr/include), which
// the key leaves out as it does the C compiler.
type cgoPreamble struct {
	includes []cInclude
	// quoteDirs (-iquote) are searched for "quoted" names only, before
	// dirs.
	quoteDirs, dirs []string
}

// cInclude is an #include of name, "quoted" or <angled>.
type cInclude struct {
	name   string
	quoted bool
}

// parsePreamble reads a cgo preamble of a file in srcDir.
func parsePreamble(srcDir, text string) cgoPreamble {
	out := cgoPreamble{includes: parseIncludes(text)}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "#cgo")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		vars, flags, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(vars)
		if len(fields) == 0 {
			continue
		}
		switch fields[len(fields)-1] {
		case "CFLAGS", "CPPFLAGS", "CXXFLAGS", "FFLAGS":
		default:
			continue
		}
		args := strings.Fields(flags)
		for i := 0; i < len(args); i++ {
			for _, opt := range []string{"-I", "-iquote", "-isystem", "-idirafter"} {
				dir, ok := strings.CutPrefix(args[i], opt)
				if !ok {
					continue
				}
				if dir == "" && i+1 < len(args) {
					i++
					dir = args[i]
				}
				if dir = strings.Trim(dir, `"'`); dir == "" {
					break
				}
				// Joined as the compiler opens it, not cleaned: "up/.."
				// is the link's parent, not ".".
				switch {
				case strings.Contains(dir, "${SRCDIR}"):
					dir = strings.ReplaceAll(dir, "${SRCDIR}", srcDir)
				case filepath.IsAbs(dir):
					dir = ""
				default:
					dir = srcDir + string(filepath.Separator) + dir
				}
				switch {
				case dir == "":
				case opt == "-iquote":
					out.quoteDirs = append(out.quoteDirs, dir)
				default:
					out.dirs = append(out.dirs, dir)
				}
				break
			}
		}
	}
	return out
}

// parseIncludes lists the #include (#include_next, #import) lines of C
// source text: a header named by a macro is not known without the
// preprocessor, and left out.
func parseIncludes(text string) []cInclude {
	var out []cInclude
	for line := range strings.Lines(text) {
		line, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			continue
		}
		line = strings.TrimSpace(line)
		var rest string
		for _, kw := range []string{"include_next", "include", "import"} {
			if r, ok := strings.CutPrefix(line, kw); ok {
				rest = strings.TrimSpace(r)
				break
			}
		}
		if rest == "" {
			continue
		}
		closer, quoted := byte('>'), rest[0] == '"'
		if quoted {
			closer = '"'
		} else if rest[0] != '<' {
			continue
		}
		if end := strings.IndexByte(rest[1:], closer); end > 0 {
			out = append(out, cInclude{name: rest[1 : 1+end], quoted: quoted})
		}
	}
	return out
}

// maxHeader bounds a C header read for the headers it includes.
const maxHeader = 64 << 20

// headerSource is what importedUp reads of the C header at p: the
// headers it includes.
func headerSource(p string) goSource {
	if goSourceReadHook != nil {
		goSourceReadHook(p)
	}
	f, err := regfile.Open(p)
	if err != nil {
		return goSource{}
	}
	defer f.Close()
	data, err := bounded.ReadAll(f, maxHeader)
	if err != nil {
		return goSource{}
	}
	return goSource{cgo: &cgoPreamble{includes: parseIncludes(string(data))}}
}

// cgoHeaders adds to *t (made when first needed) the headers outside the
// modules that the cgo file at goPath, found by walks[i], includes as
// its preamble pre says, and those they include in turn, each named by
// where it is from the module's root ("^" for each ".."), so that moving
// the whole tree keeps the key. A header is looked for as the C compiler
// looks: a quoted name beside the file that includes it first, then in
// the preamble's -iquote directories; any in its other directories. Those in a module are in its key already,
// but what they include is looked for too. included holds the headers
// seen, by their resolved paths.
func (f *Fetcher) cgoHeaders(walks []*moduleWalk, i int, t **tree.Tree, goPath string, pre *cgoPreamble, included map[string]bool) error {
	w := walks[i]
	type pending struct {
		cInclude
		from string // the directory of the file that includes it
	}
	var todo []pending
	for _, inc := range pre.includes {
		todo = append(todo, pending{inc, filepath.Dir(goPath)})
	}
	for len(todo) > 0 {
		inc := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if filepath.IsAbs(inc.name) {
			continue
		}
		var dirs []string
		if inc.quoted {
			dirs = append(dirs, inc.from)
			dirs = append(dirs, pre.quoteDirs...)
		}
		dirs = append(dirs, pre.dirs...)
		for _, d := range dirs {
			at := d + string(filepath.Separator) + filepath.FromSlash(inc.name)
			info, err := os.Stat(at)
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			resolved, err := filepath.EvalSymlinks(at)
			if err != nil || included[resolved] {
				break
			}
			included[resolved] = true
			st := tree.StampOf(info)
			if !inAny(walks, resolved) {
				if err := w.kernelDev(resolved, info); err != nil {
					return fmt.Errorf("go module %s: C header %s, included by %s: %w", w.dir, at, goPath, err)
				}
				if err := w.read(resolved, info.Size()); err != nil {
					return err
				}
				if *t == nil {
					*t = tree.New()
				}
				if err := (*t).Add(tree.Entry{Path: headerName(w.root, resolved), Kind: tree.File, Source: resolved, Stamp: st}); err != nil {
					return err
				}
			}
			if h := f.sourceOf(resolved, st, headerSource); h.cgo != nil {
				for _, next := range h.cgo.includes {
					todo = append(todo, pending{next, filepath.Dir(at)})
				}
			}
			break
		}
	}
	return nil
}

// headerName names the header at resolved in a key by where it is from
// root, each ".." written "^", or by its absolute path where it has no
// path from root (another volume).
func headerName(root, resolved string) string {
	rel, err := filepath.Rel(root, resolved)
	if err != nil {
		return "^abs/" + filepath.ToSlash(strings.TrimPrefix(resolved, filepath.VolumeName(resolved)))
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for j, el := range parts {
		if el == ".." {
			parts[j] = "^"
		}
	}
	return strings.Join(parts, "/")
}
