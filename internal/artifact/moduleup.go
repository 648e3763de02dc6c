package artifact

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/quoted"
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
// its cgo packages, and those found through links, include (see
// cgoHeaders): up/inc/x.h, through the link, was not in the key, and an
// edit of it was served the binary first built. nil where there are
// none, so that keys without them are as they were.
//
// cgo says whether the build compiles cgo files: without it no header
// is read, and a module without links up has its Go files read for
// nothing. env is what the recipe's env adds to every C compile's flags.
// reads, when not nil, gets every header the cgo packages read, in the
// modules or not (see cgoReads).
func (f *Fetcher) importedUp(walks []*moduleWalk, main string, packages []string, cgo bool, env cgoEnvFlags, reads *cgoReads) (out, headers []*tree.Tree, pc []string, err error) {
	out = make([]*tree.Tree, len(walks))
	headers = make([]*tree.Tree, len(walks))
	pc = make([]string, len(walks))
	modPaths := make([]string, len(walks))
	for i, w := range walks {
		if len(w.up) == 0 {
			continue
		}
		out[i] = tree.New()
		// Without a module path, go build imports nothing through it.
		data, err := bounded.ReadFile(filepath.Join(w.root, "go.mod"), MaxGoMod)
		if err == nil {
			modPaths[i] = modfile.ModulePath(data)
		}
	}
	// A module without links up has its Go files read too, for their
	// cgo preambles: #include "../inc/x.h", or -I${SRCDIR}/../inc, reads
	// a header outside it with no link to show it, and an edit of that
	// was served the binary first built.
	//
	// Any module's files may import through any one's links: the main
	// module a package of one it replaces. Each is queued with the walk
	// it was found by.
	type queued struct {
		goFile
		walk int
	}
	var queue []queued
	for i, w := range walks {
		if !cgo && len(w.up) == 0 {
			continue
		}
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
				return nil, nil, nil, err
			}
		}
	}
	pkgs := map[string]*cgoPackage{}
	for len(queue) > 0 {
		src := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		gs := f.goSourceOf(src.path, src.st)
		for _, ip := range gs.imports {
			if err := through(ip); err != nil {
				return nil, nil, nil, err
			}
		}
		if gs.cgo != nil && cgo {
			dir := filepath.Dir(src.path)
			pkg := pkgs[dir]
			if pkg == nil {
				pkg = &cgoPackage{dir: dir, walk: src.walk}
				pkgs[dir] = pkg
			}
			pkg.files = append(pkg.files, cgoFile{src.path, gs.cgo})
		}
	}
	if !cgo {
		return out, headers, pc, nil
	}
	if err := f.cgoHeaders(walks, pkgs, env, headers, pc, reads); err != nil {
		return nil, nil, nil, err
	}
	if reads != nil {
		reads.pkgConfig = strings.Join(pc, "")
	}
	return out, headers, pc, nil
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
	fset := token.NewFileSet()
	file, _ := parser.ParseFile(fset, p, src, parser.ImportsOnly|parser.ParseComments)
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
			pre := parsePreamble(doc.Text())
			if out.cgo == nil {
				out.cgo = &cgoPreamble{}
			}
			out.cgo.includes = append(out.cgo.includes, pre.includes...)
			out.cgo.cppflags = append(out.cgo.cppflags, pre.cppflags...)
			out.cgo.cflags = append(out.cgo.cflags, pre.cflags...)
			out.cgo.cxxflags = append(out.cgo.cxxflags, pre.cxxflags...)
			out.cgo.pkgconfig = append(out.cgo.pkgconfig, pre.pkgconfig...)
			if len(pre.pkgconfig) > 0 && out.cgo.pkgconfigLine == 0 {
				out.cgo.pkgconfigLine = pkgConfigLine(fset, doc)
			}
		}
	}
	return out
}

// firstImportRead is how much of a Go file readImportSection reads
// first; it reads twice as much each time it finds it read too little.
// Every module's Go files are read, for their cgo preambles: 64 KiB
// taken for each of GOROOT's 7,700 files made a fifth of the time they
// took clearing memory, where most imports end in the first few KiB.
const firstImportRead = 8 << 10

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

// cgoPreamble is what a cgo file's preamble says of the headers the C
// compiles of its package read: those it includes, and the arguments of
// its #cgo CPPFLAGS, CFLAGS and CXXFLAGS lines, as go build splits them,
// ${SRCDIR} as written (see cgoSearchOf). go build gives each of them to
// every compile of the package, whichever file they are in.
type cgoPreamble struct {
	includes                   []cInclude
	cppflags, cflags, cxxflags []string
	// pkgconfig are the arguments of its #cgo pkg-config lines;
	// pkgconfigLine is the file's line of the first, for what pkg-config
	// fails the key with.
	pkgconfig     []string
	pkgconfigLine int
}

// pkgConfigLine is the line of the first #cgo pkg-config line of the
// preamble doc, 0 where none is found.
func pkgConfigLine(fset *token.FileSet, doc *ast.CommentGroup) int {
	for _, c := range doc.List {
		for i, line := range strings.Split(c.Text, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimLeft(line, "/* \t"), "#cgo"); ok && strings.Contains(rest, "pkg-config:") {
				return fset.Position(c.Slash).Line + i
			}
		}
	}
	return 0
}

// cgoEnvFlags are CGO_CPPFLAGS, CGO_CFLAGS and CGO_CXXFLAGS as the
// recipe's env sets them (the user's are not passed to go build, see
// buildKnobs), split as the go command splits them (splitEnvFlags). It
// puts each before the #cgo flags of the same name of every cgo package
// it compiles, the standard library's too: an -I or -include there
// names headers the build reads as surely as a #cgo line's.
//
// environ is the build's environment, where pkg-config runs for a
// package's #cgo pkg-config lines (see pkgConfigCflags); nil runs none.
type cgoEnvFlags struct {
	cppflags, cflags, cxxflags []string
	environ                    []string
}

// splitEnvFlags splits a CGO_*FLAGS value as the go command does
// (quoted.Split). One the go command cannot split (an unterminated
// quote) fails its build: nil.
func splitEnvFlags(s string) []string {
	words, err := quoted.Split(s)
	if err != nil {
		return nil
	}
	return words
}

// cInclude is an #include of name, "quoted" or <angled>, or of a
// header named by a macro (#include HEADER), which only the preprocessor
// knows. next: an #include_next, which looks in the directories after
// the one its includer is in.
type cInclude struct {
	name                string
	quoted, macro, next bool
}

// parsePreamble reads a cgo preamble. The #cgo lines of every build
// constraint count: the key covers what any platform's build may read.
func parsePreamble(text string) cgoPreamble {
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
		// A line go build cannot split fails its build: what the key
		// makes of it matters to none.
		args := quoted.SplitCgo(flags)
		switch fields[len(fields)-1] {
		case "CPPFLAGS":
			out.cppflags = append(out.cppflags, args...)
		case "CFLAGS":
			out.cflags = append(out.cflags, args...)
		case "CXXFLAGS":
			out.cxxflags = append(out.cxxflags, args...)
		case "pkg-config":
			out.pkgconfig = append(out.pkgconfig, args...)
		}
	}
	return out
}

// parseIncludes lists the #include (#include_next, #import) lines of C
// source text, as includeScan leaves them, each once.
func parseIncludes(text string) []cInclude {
	var got includeSet
	c := newIncludeScan(got.line)
	c.feed([]byte(text))
	c.finish()
	return got.includes
}

// includeSet gathers the includes of the directive lines an includeScan
// gives, each once, and no more than the key may read files: a file of a
// gigabyte may say one include millions of times, and each was held and
// queued, gigabytes for a header of 30 MB. followIncludes refuses one of
// more than maxKeyFiles.
type includeSet struct {
	includes []cInclude
	seen     map[cInclude]bool
	// said are the lines that gave includes: a line said again is not
	// parsed again.
	said map[string]bool
}

func (s *includeSet) line(line []byte) {
	if len(s.includes) > maxKeyFiles || s.said[string(line)] {
		return
	}
	inc, ok := includeOf(string(line))
	if !ok {
		return
	}
	if s.seen == nil {
		s.seen, s.said = map[cInclude]bool{}, map[string]bool{}
	}
	s.said[string(line)] = true
	if !s.seen[inc] {
		s.seen[inc] = true
		s.includes = append(s.includes, inc)
	}
}

// includeOf reads a directive line: what it includes, if it is an
// #include, #include_next or #import.
func includeOf(line string) (cInclude, bool) {
	line, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
	if !ok {
		return cInclude{}, false
	}
	line = strings.TrimSpace(line)
	var rest string
	next := false
	for _, kw := range []string{"include_next", "include", "import"} {
		if r, ok := strings.CutPrefix(line, kw); ok {
			rest, next = strings.TrimSpace(r), kw == "include_next"
			break
		}
	}
	if rest == "" {
		return cInclude{}, false
	}
	closer, quoted := byte('>'), rest[0] == '"'
	if quoted {
		closer = '"'
	} else if rest[0] != '<' {
		return cInclude{name: rest, macro: true}, true
	}
	if end := strings.IndexByte(rest[1:], closer); end > 0 {
		return cInclude{name: rest[1 : 1+end], quoted: quoted, next: next}, true
	}
	return cInclude{}, false
}

// maxDirectiveLine is as much of a directive line of a C file as
// cLines holds: one longer (a table on one line, a run of NULs after a
// "#") is cut to it.
const maxDirectiveLine = 64 << 10

// headerSource is what importedUp reads of the C file (a header, or a
// package's .c, .cc, ... file) at p: the headers it includes, as
// includeScan reads it. It is read to its end in pieces, however
// long: its first 64 MiB were read
// whole into memory, and a larger one gave no includes at all, so that
// what it included was in no key. Its bytes count in the key's budget
// already, which bounds how long this takes.
func headerSource(p string) goSource {
	if goSourceReadHook != nil {
		goSourceReadHook(p)
	}
	f, err := regfile.Open(p)
	if err != nil {
		return goSource{}
	}
	defer f.Close()
	var got includeSet
	c := newIncludeScan(got.line)
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		c.feed(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return goSource{}
		}
	}
	c.finish()
	return goSource{cgo: &cgoPreamble{includes: got.includes}}
}

// cgoPackage is a package directory of cgo files, found by walks[walk].
//
// every: it stands for every cgo package of the build, the standard
// library's too (the recipe's env flags' forced includes): what it
// reads is hashed by go build for none of them (cgoRead.pkgDir).
type cgoPackage struct {
	dir   string
	walk  int
	files []cgoFile
	every bool
}

// cgoFile is a cgo Go file at path, with what its preamble says.
type cgoFile struct {
	path string
	pre  *cgoPreamble
}

// cDir is a directory the C compiler looks for headers in; abs when the
// recipe's module names it by an absolute path (-I/opt/x/include), not
// from the package's directory.
type cDir struct {
	path string
	abs  bool
}

// cgoSearch is where the C compiler of a cgo package looks for headers
// (gcc's order): a "quoted" name beside the file that includes it, then
// in quote (-iquote); any name in dirs (the package's directory, where
// go build points its first -I, then the -I flags), system (-isystem),
// after (-idirafter). forced are the -include and -imacros files, which
// each compile reads first, from the package's directory on.
type cgoSearch struct {
	quote, dirs, system, after []cDir
	forced                     []string
}

// cgoSearchOf reads the search flags, args, of a package in dir. A
// directory is joined as the compiler opens it, not cleaned: "up/.." is
// the link's parent, not ".".
func cgoSearchOf(dir string, args []string) cgoSearch {
	s := cgoSearch{dirs: []cDir{{path: dir}}}
	// A directory written =DIR is DIR below the sysroot (gcc): the one
	// --sysroot names, else the compiler's own, / for a native gcc and
	// Debian's cross compilers alike.
	sysroot := "/"
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--sysroot="); ok && v != "" {
			sysroot = v
		} else if a == "--sysroot" && i+1 < len(args) && args[i+1] != "" {
			sysroot = args[i+1]
		}
	}
	for i := 0; i < len(args); i++ {
		for _, opt := range []string{"-I", "-iquote", "-isystem", "-idirafter", "-include", "-imacros"} {
			v, ok := strings.CutPrefix(args[i], opt)
			if !ok {
				continue
			}
			if v == "" && i+1 < len(args) {
				i++
				v = args[i]
			}
			if v == "" {
				break
			}
			if opt == "-include" || opt == "-imacros" {
				s.forced = append(s.forced, v)
				break
			}
			if rest, ok := strings.CutPrefix(v, "="); ok {
				v = filepath.Join(sysroot, rest)
				if !filepath.IsAbs(v) {
					v = filepath.Join(dir, v)
				}
			}
			d := cDir{path: v, abs: true}
			switch {
			case strings.Contains(v, "${SRCDIR}"):
				d = cDir{path: strings.ReplaceAll(v, "${SRCDIR}", dir)}
			case !filepath.IsAbs(v):
				d = cDir{path: dir + string(filepath.Separator) + v}
			}
			switch opt {
			case "-iquote":
				s.quote = append(s.quote, d)
			case "-isystem":
				s.system = append(s.system, d)
			case "-idirafter":
				s.after = append(s.after, d)
			default:
				s.dirs = append(s.dirs, d)
			}
			break
		}
	}
	return s
}

// cgoFileLang says which compiles go build gives a file of a cgo
// package to, by its name: C (with the Go files' preambles), C++, or
// none ("").
func cgoFileLang(name string) string {
	if strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
		return ""
	}
	switch filepath.Ext(name) {
	case ".c", ".h", ".m", ".s", ".S", ".sx":
		return "c"
	case ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx":
		return "c++"
	}
	return ""
}

// cgoHeaders adds to headers[i] (made when first needed) the headers
// outside the modules that the cgo packages found by walks[i] read: what
// the preambles of their Go files and their C and C++ files (.c, .cc,
// .m, .S, .h, ...), which go build compiles with them, include, and
// what those include in turn. Each is looked for as the C compiler looks
// (cgoSearch), with the flags of all the package's #cgo lines, and named
// in the key by where it is from the module's root ("^" for each ".."),
// so that moving the whole tree keeps the key, or by its absolute path
// where an absolute one found it. Those in a module are in its key
// already, but what they include is looked for too. What they all read
// counts in the walks' budget.
//
// env's flags come before each package's own, as the go command puts
// them. Its forced includes are followed from the main module's
// directory too, where it has no cgo package: the standard library's
// (runtime/cgo) compiles read them all the same.
//
// A package's #cgo pkg-config lines add what pkg-config answers to its
// CPPFLAGS, after its own, as the go command adds them: its -I
// directories are searched too. pc[i] gets the answers of walks[i]'s
// packages: go build's cache hashes neither them nor the headers they
// lead to, and a .pc file edited changes the flags of the compile.
func (f *Fetcher) cgoHeaders(walks []*moduleWalk, pkgs map[string]*cgoPackage, env cgoEnvFlags, headers []*tree.Tree, pc []string, reads *cgoReads) error {
	dirs := slices.Sorted(maps.Keys(pkgs))
	keyed := map[string]bool{}
	if len(walks) > 0 {
		for _, args := range [][]string{slices.Concat(env.cppflags, env.cflags), slices.Concat(env.cppflags, env.cxxflags)} {
			search := cgoSearchOf(walks[0].root, args)
			if len(search.forced) == 0 {
				continue
			}
			if err := f.followIncludes(walks, &cgoPackage{dir: walks[0].root, every: true}, headers, nil, search, keyed, reads); err != nil {
				return err
			}
		}
	}
	for _, dir := range dirs {
		pkg := pkgs[dir]
		// go build reads a package's files in their names' order.
		slices.SortFunc(pkg.files, func(a, b cgoFile) int { return strings.Compare(a.path, b.path) })
		var cpp, c, cxx, pcArgs []string
		pcAt := dir // where the first #cgo pkg-config line is
		// Each language's compiles read its forced includes, whatever
		// its files include; the preambles are compiled as C.
		roots := map[string][]cInclude{"c": {}}
		for _, g := range pkg.files {
			cpp = append(cpp, g.pre.cppflags...)
			c = append(c, g.pre.cflags...)
			cxx = append(cxx, g.pre.cxxflags...)
			if len(pcArgs) == 0 && len(g.pre.pkgconfig) > 0 {
				pcAt = g.path
				if g.pre.pkgconfigLine > 0 {
					pcAt += ":" + strconv.Itoa(g.pre.pkgconfigLine)
				}
			}
			pcArgs = append(pcArgs, g.pre.pkgconfig...)
			roots["c"] = append(roots["c"], g.pre.includes...)
		}
		if len(pcArgs) > 0 && env.environ != nil {
			answer, err := pkgConfigCflags(dir, pcArgs, env.environ)
			if err != nil {
				return fmt.Errorf("go module %s: %s: #cgo pkg-config: %w", walks[pkg.walk].dir, pcAt, err)
			}
			pc[pkg.walk] += strings.Join(pcArgs, " ") + "\x00" + answer + "\n"
			cpp = append(cpp, quoted.SplitPkgConfig(answer)...)
		}
		search := map[string]cgoSearch{
			"c":   cgoSearchOf(dir, slices.Concat(env.cppflags, cpp, env.cflags, c)),
			"c++": cgoSearchOf(dir, slices.Concat(env.cppflags, cpp, env.cxxflags, cxx)),
		}
		// A directory that cannot be listed fails go build.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			lang := cgoFileLang(e.Name())
			if lang == "" {
				continue
			}
			p := filepath.Join(dir, e.Name())
			info, err := os.Stat(p)
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			if roots[lang] == nil {
				roots[lang] = []cInclude{}
			}
			if src := f.sourceOf(p, tree.StampOf(info), headerSource); src.cgo != nil {
				roots[lang] = append(roots[lang], src.cgo.includes...)
			}
		}
		for _, lang := range []string{"c", "c++"} {
			if roots[lang] == nil {
				continue // no compile in that language
			}
			if err := f.followIncludes(walks, pkg, headers, roots[lang], search[lang], keyed, reads); err != nil {
				return err
			}
		}
	}
	return nil
}

// followIncludes adds to headers[pkg.walk] the headers outside the
// modules that incs, in a file of pkg, and search's forced ones include,
// and what they include in turn. keyed holds the headers added to a
// key, by their resolved paths: a header in two packages is looked
// through in each, whose flags may find other headers for its includes,
// but keyed once. reads, when not nil, gets each header followed.
func (f *Fetcher) followIncludes(walks []*moduleWalk, pkg *cgoPackage, headers []*tree.Tree, incs []cInclude, search cgoSearch, keyed map[string]bool, reads *cgoReads) error {
	w := walks[pkg.walk]
	type pending struct {
		cInclude
		from cDir   // the directory of the file that includes it
		by   string // that file, or its package's directory
		// inDir: name is an absolute path made from from, a file
		// under it that a macro include may name.
		inDir bool
	}
	src := cDir{path: pkg.dir}
	var todo []pending
	// Each once: every cgo file of a package may include the same
	// headers, and a preamble may say one a million times, each
	// queued and looked up again, 3 GiB for a preamble of 1M lines.
	seeded := map[cInclude]bool{}
	for _, inc := range incs {
		if !seeded[inc] {
			seeded[inc] = true
			todo = append(todo, pending{cInclude: inc, from: src, by: pkg.dir})
		}
	}
	for _, name := range search.forced {
		inc := pending{cInclude: cInclude{name: name, quoted: true}, from: src, by: pkg.dir}
		if strings.Contains(name, "${SRCDIR}") {
			// Relative to the package, however it is written.
			rel, _ := filepath.Rel(pkg.dir, strings.ReplaceAll(name, "${SRCDIR}", pkg.dir))
			inc.name = filepath.ToSlash(rel)
		}
		todo = append(todo, inc)
	}
	visited := map[string]bool{}
	listed := map[string]bool{}
	for len(todo) > 0 {
		inc := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if inc.macro {
			// The header may be any file below any directory the
			// compiler searches, the includer's own first (HEADER may
			// be "sub/x.h"): the key takes all those outside the
			// modules, with what they include, as far as the budget
			// allows. A macro that names a path up from them
			// ("../x.h"), or through a link to a directory in them,
			// is not followed.
			for _, d := range slices.Concat([]cDir{inc.from}, search.quote, search.dirs, search.system, search.after) {
				// Walked from where each leads, and the links to
				// directories below it too: gcc opens a name through
				// them, where filepath.WalkDir takes a link for a
				// file, and the key had the link alone. Each directory
				// is walked once, by where it is, a link up included.
				roots := []string{d.path}
				for len(roots) > 0 {
					root := roots[len(roots)-1]
					roots = roots[:len(roots)-1]
					resolved, err := filepath.EvalSymlinks(root)
					if err != nil || listed[resolved] {
						continue // a directory the compiler cannot search either
					}
					listed[resolved] = true
					if err := kernelMade(resolved); err != nil {
						return fmt.Errorf("go module %s: %s includes a header named by a macro, which may be any file below %s: %w", w.dir, inc.by, root, err)
					}
					err = filepath.WalkDir(resolved, func(p string, e fs.DirEntry, err error) error {
						switch {
						case err != nil:
							return nil // a directory the compiler cannot read either
						case e.IsDir() && (e.Name() == ".git" || e.Name() == ".hg"):
							return filepath.SkipDir
						case e.IsDir():
							// A module's files are in its key already.
							if r, err := filepath.EvalSymlinks(p); err == nil && inAny(walks, r) {
								return filepath.SkipDir
							}
							if reads != nil {
								reads.lookedIn(p)
							}
							return nil
						case e.Type()&fs.ModeSymlink != 0:
							if info, err := os.Stat(p); err == nil && info.IsDir() {
								roots = append(roots, p)
								return nil
							}
						}
						// Bounded before any is read: a search
						// directory of / would list every file.
						if len(todo) >= maxKeyFiles {
							return blame("module", fmt.Errorf("more than %d files below %s: the cache key would read them all", maxKeyFiles, root))
						}
						todo = append(todo, pending{cInclude: cInclude{name: p, quoted: true}, from: cDir{filepath.Dir(p), d.abs}, by: inc.by, inDir: !d.abs})
						return nil
					})
					if err != nil {
						return fmt.Errorf("go module %s: %s includes a header named by a macro, which may be any file in the directories its package's compiler searches, and the key takes them all: %w", w.dir, inc.by, err)
					}
				}
			}
			continue
		}
		var dirs []cDir
		switch {
		case filepath.IsAbs(inc.name):
			dirs = []cDir{{abs: !inc.inDir}}
		case inc.quoted:
			dirs = slices.Concat([]cDir{inc.from}, search.quote, search.dirs, search.system, search.after)
		default:
			dirs = slices.Concat(search.dirs, search.system, search.after)
		}
		for _, d := range dirs {
			at := filepath.FromSlash(inc.name)
			if d.path != "" {
				at = d.path + string(filepath.Separator) + at
			}
			info, err := os.Stat(at)
			if err != nil || !info.Mode().IsRegular() {
				if reads != nil {
					reads.lookedIn(at[:max(1, strings.LastIndexByte(at, filepath.Separator))])
				}
				continue
			}
			// An #include_next's header is one after its includer's:
			// each found is taken, not knowing which directory that is
			// in (a header can be reached through several).
			resolved, err := filepath.EvalSymlinks(at)
			if err != nil || visited[resolved] {
				if inc.next {
					continue
				}
				break
			}
			visited[resolved] = true
			st := tree.StampOf(info)
			if reads != nil {
				name := headerName(reads.root, resolved)
				if d.abs {
					name = absHeaderName(resolved)
				}
				read := cgoRead{at: at, pkgDir: pkg.dir, name: name, resolved: resolved, st: st}
				if pkg.every {
					read.pkgDir = ""
				}
				reads.list = append(reads.list, read)
			}
			if !keyed[resolved] && !inAny(walks, resolved) {
				if err := w.kernelDev(resolved, info); err != nil {
					return fmt.Errorf("go module %s: C header %s, included by %s: %w", w.dir, at, inc.by, err)
				}
				if err := w.read(resolved, info.Size()); err != nil {
					if inc.inDir {
						return fmt.Errorf("go module %s: %s includes a header named by a macro, which may be any file in the directories its package's compiler searches, and the key takes them all: %w", w.dir, inc.by, err)
					}
					// The budget's own words name only the module:
					// a chain of headers outside it is what went over.
					return fmt.Errorf("go module %s: C header %s, included by %s: %w", w.dir, at, inc.by, err)
				}
				if headers[pkg.walk] == nil {
					headers[pkg.walk] = tree.New()
				}
				name := headerName(w.root, resolved)
				if d.abs {
					name = absHeaderName(resolved)
				}
				if err := headers[pkg.walk].Add(tree.Entry{Path: name, Kind: tree.File, Source: resolved, Stamp: st}); err != nil {
					return err
				}
			}
			keyed[resolved] = true
			h := f.sourceOf(resolved, st, headerSource)
			if h.cgo == nil {
				// gcc fails on it as well. headerSource keeps no
				// error: the open's is asked again, where the key's
				// digest said it with neither the includer nor that
				// it is a header.
				err := errors.New("it could not be read to its end")
				if r, oerr := regfile.Open(resolved); oerr != nil {
					err = oerr
				} else {
					r.Close()
				}
				return fmt.Errorf("go module %s: C header %s, included by %s: %w", w.dir, at, inc.by, err)
			}
			if n := len(h.cgo.includes); n > maxKeyFiles {
				return blame("module", fmt.Errorf("go module %s: C header %s, included by %s, includes more than %d headers: the cache key would read them all", w.dir, at, inc.by, maxKeyFiles))
			}
			for _, next := range h.cgo.includes {
				todo = append(todo, pending{cInclude: next, from: cDir{path: filepath.Dir(at), abs: d.abs}, by: at})
			}
			if !inc.next {
				break
			}
		}
	}
	return nil
}

// cgoReads are the headers the cgo packages of a build read, as the
// key finds them, with names from root, the main module's directory
// resolved.
type cgoReads struct {
	root string
	list []cgoRead
	// pkgConfig are pkg-config's answers for the packages (cgoHeaders).
	pkgConfig string
	// looked are the directories looked in for a header not found
	// there, and those a macro's include had listed, with their stamps
	// (none for one not there): a header made in one since (a new
	// inc/v.h over the lib/v.h found, a new sys/ with it) changes it,
	// where the headers found alone did not show it.
	looked map[string]tree.Stamp
}

// lookedIn notes that dir was looked in, as it is now.
func (r *cgoReads) lookedIn(dir string) {
	if _, ok := r.looked[dir]; ok {
		return
	}
	if r.looked == nil {
		r.looked = map[string]tree.Stamp{}
	}
	var st tree.Stamp
	if info, err := os.Stat(dir); err == nil {
		st = tree.StampOf(info)
	}
	r.looked[dir] = st
}

// unchanged says whether each directory of looked is as it was.
func (r *cgoReads) unchanged() bool {
	for dir, st := range r.looked {
		var now tree.Stamp
		if info, err := os.Stat(dir); err == nil {
			now = tree.StampOf(info)
		}
		if now != st {
			return false
		}
	}
	return true
}

// cgoRead is a header that the C compiles of the package in pkgDir ("":
// of every package) read:
// at is the path they open, resolved where it leads, and name how the
// key names it (headerName, absHeaderName), st its stamp.
type cgoRead struct {
	at, pkgDir, name, resolved string
	st                         tree.Stamp
}

// headerName names the header at resolved in a key by where it is from
// root, each ".." written "^", or by its absolute path where it has no
// path from root (another volume). A name of the path's own that starts
// with "^" takes one more: ../../x.h and ../^/x.h had one name, and the
// key failed on a build that gcc makes.
func headerName(root, resolved string) string {
	rel, err := filepath.Rel(root, resolved)
	if err != nil {
		return absHeaderName(resolved)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for j, el := range parts {
		switch {
		case el == "..":
			parts[j] = "^"
		case strings.HasPrefix(el, "^"):
			parts[j] = "^" + el
		}
	}
	return strings.Join(parts, "/")
}

// absHeaderName names the header at resolved in a key by its absolute
// path.
func absHeaderName(resolved string) string {
	return "^abs/" + filepath.ToSlash(strings.TrimPrefix(resolved, filepath.VolumeName(resolved)))
}
