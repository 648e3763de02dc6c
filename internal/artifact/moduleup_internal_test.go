package artifact

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/platform"
)

// A Go file whose imports come after a megabyte of comment (a long
// licence, a generated header) imports through a link up as any other:
// its first megabyte only was read, which held no import, and an edit in
// the package it imports was served the binary first built.
func TestModuleKeyImportsAfterLongComment(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	var long strings.Builder
	for long.Len() <= 1<<20 {
		long.WriteString("// Licensed under the terms that take many lines to say.\n")
	}
	writeTestFile(t, filepath.Join(mod, "main.go"), long.String()+"package main\n\n/* and one "+strings.Repeat("more ", 1<<18)+"*/\nimport \"example.com/m/up/lib\"\n\nfunc main() { println(lib.Name) }\n")
	writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"one\"\n")
	if err := os.Symlink("..", filepath.Join(mod, "up")); err != nil {
		t.Fatal(err)
	}
	f := New()
	before, err := moduleKey(f, mod)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"two\"\n")
	if after, err := moduleKey(f, mod); err != nil || after == before {
		t.Errorf("a package imported after 1.3 MB of comment changed: the key changed %v (%v)", after != before, err)
	}
}

// readImportSection stops past the imports, wherever its reads end: at
// every length of a file's start, importsEnd says where they end only if
// that is where they end in the whole file, and a read of a file gives
// the imports of the whole.
func TestImportSectionAtEveryCut(t *testing.T) {
	src := "// Package p.\n//go:build linux\n\npackage p // p\n\n/* a */ import \"a\"\nimport (\n\t\"b\" // ) b\n\tc \"c/d\"\n)\n\nimport . \"e\"; import _ \"import\"\n\n// impish\nvar imp = 1\n"
	whole, ok := importsEnd([]byte(src))
	if !ok || !strings.HasPrefix(src[whole:], "var imp") {
		t.Fatalf("the whole file's imports end at %d (%v): %q", whole, ok, src[whole:])
	}
	for n := range len(src) {
		if end, ok := importsEnd([]byte(src[:n])); ok && end != whole {
			t.Errorf("cut at %d: the imports end at %d, want %d or not known", n, end, whole)
		}
	}
	p := filepath.Join(t.TempDir(), "p.go")
	writeTestFile(t, p, src+strings.Repeat("var x = 1\n", firstImportRead))
	got := readGoSource(p).imports
	if want := []string{"a", "b", "c/d", "e", "import"}; !slices.Equal(got, want) {
		t.Errorf("imports %q, want %q", got, want)
	}
}

// The Go files a module's key reads through a link up are read once per
// build while their stamps hold: a module of 100,000 files read them all
// again for each key made of it. An edited one is read again. Not
// parallel: it sets goSourceReadHook.
func TestModuleKeyReadsGoFilesOncePerStamp(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\nimport \"example.com/m/up/lib\"\n\nfunc main() { println(lib.Name) }\n")
	writeTestFile(t, filepath.Join(mod, "other.go"), "package main\n")
	writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"one\"\n")
	if err := os.Symlink("..", filepath.Join(mod, "up")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reads := map[string]int{}
	goSourceReadHook = func(p string) {
		mu.Lock()
		defer mu.Unlock()
		reads[filepath.Base(p)]++
	}
	defer func() { goSourceReadHook = nil }()
	f := New()
	key := func() string {
		t.Helper()
		k, err := moduleKey(f, mod)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := key()
	if reads["main.go"] != 1 || reads["lib.go"] != 1 || reads["other.go"] != 1 {
		t.Fatalf("first key: reads %v, want each file once", reads)
	}
	clear(reads)
	if again := key(); again != first {
		t.Fatalf("the key changed with nothing edited")
	}
	if len(reads) != 0 {
		t.Errorf("second key: read again %v, want none", reads)
	}
	// Another size too: a stamp taken within the timestamps'
	// granularity of the first write may be the same but for it.
	writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"three\"\n")
	if edited := key(); edited == first {
		t.Errorf("lib.go edited: the key is as it was")
	}
	if want := map[string]int{"lib.go": 1}; len(reads) != 1 || reads["lib.go"] != 1 {
		t.Errorf("lib.go edited: reads %v, want %v", reads, want)
	}
}

// A C header a cgo file includes through a link up (up/inc/x.h, or by a
// directory its #cgo flags name through the link), and the headers it
// includes in turn, are in the module's key: none was, and an edit of
// one was served the binary first built. A header nothing includes is
// not read.
func TestModuleKeyCgoHeadersThroughLinksUp(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo linux CFLAGS: -DX=1 -I${SRCDIR}/up/inc -I /usr/include\n#include <stdio.h>\n#include \"up/shared/a.h\"\n  # include <b.h>\n*/\nimport \"C\"\n\nfunc main() { C.puts(nil) }\n")
	writeTestFile(t, filepath.Join(mod, "local.h"), "int local;\n")
	writeTestFile(t, filepath.Join(dir, "shared", "a.h"), "#include \"c.h\"\n")
	writeTestFile(t, filepath.Join(dir, "shared", "c.h"), "int c;\n")
	writeTestFile(t, filepath.Join(dir, "inc", "b.h"), "#include \"sub/d.h\"\n")
	writeTestFile(t, filepath.Join(dir, "inc", "sub", "d.h"), "int d;\n")
	writeTestFile(t, filepath.Join(dir, "inc", "unused.h"), "int unused;\n")
	if err := os.Symlink("..", filepath.Join(mod, "up")); err != nil {
		t.Fatal(err)
	}
	checkKeyEdits(t, New(), mod, dir, []keyEdit{
		{filepath.Join("shared", "a.h"), true},
		{filepath.Join("shared", "c.h"), true},
		{filepath.Join("inc", "b.h"), true},
		{filepath.Join("inc", "sub", "d.h"), true},
		{filepath.Join("inc", "unused.h"), false},
	})
}

// parsePreamble takes the arguments of a preamble's #cgo CPPFLAGS,
// CFLAGS and CXXFLAGS lines as go build splits them, and cgoSearchOf
// finds the directories they have the compiler search, as it opens them
// (relative to the package's directory), in its order.
func TestParsePreamble(t *testing.T) {
	sep := string(filepath.Separator)
	got := parsePreamble("#cgo CFLAGS: -I${SRCDIR}/up/inc -Iinc -I /usr/include -isystem ${SRCDIR}/sys -O2 -I\"${SRCDIR}/my inc\" '-I${SRCDIR}/it''s' -I${SRCDIR}/a\\ b\n#cgo  windows,amd64 CPPFLAGS: -iquote q -include ${SRCDIR}/force.h\n#cgo LDFLAGS: -L${SRCDIR}/lib\n#cgo CXXFLAGS: -Icxx\n#cgoCFLAGS: -Ino\n#include \"a.h\"\n#  include_next <b/c.h>\n#include MACRO\n#import \"d.h\"\n")
	wantC := []string{"-I${SRCDIR}/up/inc", "-Iinc", "-I", "/usr/include", "-isystem", "${SRCDIR}/sys", "-O2", "-I${SRCDIR}/my inc", "-I${SRCDIR}/its", "-I${SRCDIR}/a b"}
	if !slices.Equal(got.cflags, wantC) {
		t.Errorf("CFLAGS %q, want %q", got.cflags, wantC)
	}
	if want := []string{"-iquote", "q", "-include", "${SRCDIR}/force.h"}; !slices.Equal(got.cppflags, want) {
		t.Errorf("CPPFLAGS %q, want %q", got.cppflags, want)
	}
	if want := []string{"-Icxx"}; !slices.Equal(got.cxxflags, want) {
		t.Errorf("CXXFLAGS %q, want %q", got.cxxflags, want)
	}
	wantIncludes := []cInclude{{name: "a.h", quoted: true}, {name: "b/c.h", next: true}, {name: "MACRO", macro: true}, {name: "d.h", quoted: true}}
	if !slices.Equal(got.includes, wantIncludes) {
		t.Errorf("includes %v, want %v", got.includes, wantIncludes)
	}

	s := cgoSearchOf("/src/m", slices.Concat(got.cppflags, got.cflags))
	wantDirs := []cDir{{"/src/m", false}, {"/src/m/up/inc", false}, {"/src/m" + sep + "inc", false}, {"/usr/include", true}, {"/src/m/my inc", false}, {"/src/m/its", false}, {"/src/m/a b", false}}
	if !slices.Equal(s.dirs, wantDirs) {
		t.Errorf("dirs %v, want %v", s.dirs, wantDirs)
	}
	if want := []cDir{{"/src/m/sys", false}}; !slices.Equal(s.system, want) {
		t.Errorf("-isystem dirs %v, want %v", s.system, want)
	}
	if want := []cDir{{"/src/m" + sep + "q", false}}; !slices.Equal(s.quote, want) {
		t.Errorf("-iquote dirs %v, want %v", s.quote, want)
	}
	if want := []string{"${SRCDIR}/force.h"}; !slices.Equal(s.forced, want) {
		t.Errorf("forced includes %q, want %q", s.forced, want)
	}

	// =DIR is DIR below the sysroot: --sysroot's, else /. It was read
	// as a directory named "=" in the package's.
	s = cgoSearchOf("/src/m", []string{"-I=/usr/include/x", "-isystem", "=/opt/inc"})
	if want := []cDir{{"/src/m", false}, {"/usr/include/x", true}}; !slices.Equal(s.dirs, want) {
		t.Errorf("dirs of -I=/usr/include/x %v, want %v", s.dirs, want)
	}
	if want := []cDir{{"/opt/inc", true}}; !slices.Equal(s.system, want) {
		t.Errorf("dirs of -isystem =/opt/inc %v, want %v", s.system, want)
	}
	s = cgoSearchOf("/src/m", []string{"--sysroot=/sr", "-I=/inc", "-I=rel"})
	if want := []cDir{{"/src/m", false}, {"/sr/inc", true}, {"/sr/rel", true}}; !slices.Equal(s.dirs, want) {
		t.Errorf("dirs with --sysroot=/sr %v, want %v", s.dirs, want)
	}
}

// The headers outside a module that its cgo package reads are in its key
// with no link up to them: through "../" in an #include or in a #cgo
// flag's directory, included by a .c or .cc file of the package as well
// as by a preamble, in a directory whose name go build's quoting keeps
// whole (-I"${SRCDIR}/../my inc"), in one named by an absolute path,
// through another file's #cgo flags, or by -include. None was, and an
// edit of any was served the binary first built. Headers nothing
// includes, beside them, are not read.
func TestModuleKeyCgoHeadersOutside(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	abs := filepath.Join(dir, "abs")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo CFLAGS: -I\"${SRCDIR}/../my inc\" -I"+abs+"\n#include \"../shared/a.h\"\n#include <spaced.h>\n#include <absolute.h>\n#include <other.h>\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "flags.go"), "package main\n\n// #cgo CPPFLAGS: -I${SRCDIR}/../other -include ${SRCDIR}/../forced.h\n// #cgo CXXFLAGS: -I${SRCDIR}/../cxxinc\nimport \"C\"\n")
	writeTestFile(t, filepath.Join(mod, "helper.c"), "#include \"../cside/c.h\"\n")
	writeTestFile(t, filepath.Join(mod, "helper.cc"), "#include <cxx.h>\n")
	writeTestFile(t, filepath.Join(dir, "shared", "a.h"), "int a;\n")
	writeTestFile(t, filepath.Join(dir, "my inc", "spaced.h"), "int spaced;\n")
	writeTestFile(t, filepath.Join(abs, "absolute.h"), "#include \"next.h\"\n")
	writeTestFile(t, filepath.Join(abs, "next.h"), "int next;\n")
	writeTestFile(t, filepath.Join(dir, "other", "other.h"), "int other;\n")
	writeTestFile(t, filepath.Join(dir, "forced.h"), "int forced;\n")
	writeTestFile(t, filepath.Join(dir, "cside", "c.h"), "int c;\n")
	writeTestFile(t, filepath.Join(dir, "cxxinc", "cxx.h"), "int cxx;\n")
	for _, unused := range []string{"shared", "my inc", "abs", "other", "cside", "cxxinc"} {
		writeTestFile(t, filepath.Join(dir, unused, "unused.h"), "int unused;\n")
	}
	checkKeyEdits(t, New(), mod, dir, []keyEdit{
		{filepath.Join("shared", "a.h"), true},
		{filepath.Join("my inc", "spaced.h"), true},
		{filepath.Join("abs", "absolute.h"), true},
		{filepath.Join("abs", "next.h"), true},
		{filepath.Join("other", "other.h"), true},
		{"forced.h", true},
		{filepath.Join("cside", "c.h"), true},
		{filepath.Join("cxxinc", "cxx.h"), true},
		{filepath.Join("shared", "unused.h"), false},
		{filepath.Join("my inc", "unused.h"), false},
		{filepath.Join("abs", "unused.h"), false},
		{filepath.Join("other", "unused.h"), false},
		{filepath.Join("cside", "unused.h"), false},
		{filepath.Join("cxxinc", "unused.h"), false},
	})
}

// A module whose cgo files include nothing outside it keeps the key it
// had before its headers were looked for: no "cgo:" part.
func TestModuleKeyCgoHeadersInsideOnly(t *testing.T) {
	mod := t.TempDir()
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I${SRCDIR}/inc\n// #include <stdio.h>\n// #include \"in.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "inc", "in.h"), "#include \"more.h\"\n")
	writeTestFile(t, filepath.Join(mod, "inc", "more.h"), "int more;\n")
	k, err := moduleKey(New(), mod)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k, "cgo:") {
		t.Errorf("key %q has a cgo part, with every header in the module", k)
	}
}

// A header named by a macro (#include CONFIG) may be any file below the
// directories the compiler searches, the includer's own first: the key
// takes every one outside the modules, and what they include. None was,
// and an edit of the header the macro named was served the binary first
// built. A file in no such directory is not read.
func TestModuleKeyCgoMacroInclude(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo CFLAGS: -I${SRCDIR}/../inc\n#define CONFIG \"sub/conf.h\"\n#include CONFIG\n#include \"../shared/m.h\"\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "inc", "sub", "conf.h"), "#include \"deeper.h\"\n")
	writeTestFile(t, filepath.Join(dir, "inc", "sub", "deeper.h"), "int deeper;\n")
	writeTestFile(t, filepath.Join(dir, "shared", "m.h"), "#include NAME\n")
	writeTestFile(t, filepath.Join(dir, "shared", "sub", "y.h"), "int y;\n")
	writeTestFile(t, filepath.Join(dir, "elsewhere", "x.h"), "int x;\n")
	checkKeyEdits(t, New(), mod, dir, []keyEdit{
		{filepath.Join("inc", "sub", "conf.h"), true},
		{filepath.Join("inc", "sub", "deeper.h"), true},
		{filepath.Join("shared", "sub", "y.h"), true},
		{filepath.Join("elsewhere", "x.h"), false},
	})

	// More files below those directories than the key may read: it
	// fails as it lists them, before it reads them, and says which
	// file's macro include made it list which directory.
	defer func(n int) { maxKeyFiles = n }(maxKeyFiles)
	maxKeyFiles = 5
	for i := range 5 {
		writeTestFile(t, filepath.Join(dir, "inc", "many", strconv.Itoa(i)+".h"), "int many;\n")
	}
	_, err := moduleKey(New(), mod)
	if err == nil || !strings.Contains(err.Error(), "named by a macro") || !strings.Contains(err.Error(), mod+"/../shared/m.h") || !strings.Contains(err.Error(), "below "+mod+"/../inc") {
		t.Errorf("a macro include below a directory of too many files: %v, want the includer, the macro and the directory named", err)
	}
}

// An #include_next looks in the directories after its includer's, for a
// header of the same name, typically: the key looked from the first
// again, found the includer, and keyed not the header it includes. An
// edit of that was served the binary first built.
func TestModuleKeyCgoIncludeNext(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I${SRCDIR}/../wrap -I${SRCDIR}/../real\n// #include <x.h>\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "wrap", "x.h"), "#include_next <x.h>\n")
	writeTestFile(t, filepath.Join(dir, "real", "x.h"), "int x;\n")
	writeTestFile(t, filepath.Join(dir, "real", "unused.h"), "int unused;\n")
	f := New()
	key := func() string {
		t.Helper()
		k, err := moduleKey(f, mod)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	before := key()
	writeTestFile(t, filepath.Join(dir, "real", "unused.h"), "int unused, edited;\n")
	if key() != before {
		t.Errorf("real/unused.h edited: the key changed")
	}
	writeTestFile(t, filepath.Join(dir, "real", "x.h"), "int x, edited;\n")
	if key() == before {
		t.Errorf("real/x.h, which wrap/x.h includes with #include_next, edited: the key is as it was")
	}
}

// The headers outside a module are named in its key by where they are
// from it: moving the whole tree keeps the key, as it does a module's
// without them.
func TestModuleKeyCgoHeadersMoved(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from"), filepath.Join(dir, "to")
	writeTestFile(t, filepath.Join(from, "mod", "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(from, "mod", "main.go"), "package main\n\n// #cgo CFLAGS: -I${SRCDIR}/../inc\n// #include <x.h>\n// #include \"../shared/y.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(from, "inc", "x.h"), "int x;\n")
	writeTestFile(t, filepath.Join(from, "shared", "y.h"), "int y;\n")
	before, err := moduleKey(New(), filepath.Join(from, "mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before, "cgo:") {
		t.Fatalf("key %q has no cgo part", before)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
	if after, err := moduleKey(New(), filepath.Join(to, "mod")); err != nil || after != before {
		t.Errorf("the tree moved: key %q (%v), was %q", after, err, before)
	}
}

// keyEdit is a file below a test's directory that checkKeyEdits edits,
// and whether the module's key must change with it.
type keyEdit struct {
	file    string
	changes bool
}

// checkKeyEdits edits each file below dir in turn, appending to it (what
// it includes stays; each edit another size, so that a stamp cannot hide
// it) and checks that mod's key, through f, changes with it or not.
func checkKeyEdits(t *testing.T, f *Fetcher, mod, dir string, edits []keyEdit) {
	t.Helper()
	key := func() string {
		t.Helper()
		k, err := moduleKey(f, mod)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	before := key()
	for i, edit := range edits {
		old, err := os.ReadFile(filepath.Join(dir, edit.file))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, edit.file), string(old)+strings.Repeat("/* edited */\n", i+1))
		if after := key(); (after != before) != edit.changes {
			t.Errorf("%s edited: the key changed %v, want %v", edit.file, after != before, edit.changes)
		} else {
			before = after
		}
	}
}

// The recipe's CGO_CPPFLAGS, CGO_CFLAGS and CGO_CXXFLAGS name headers as
// a #cgo line does (-I, -iquote, -isystem, -idirafter, -include), each
// split as the go command splits it (an element in quotes whole, a
// space in it), the last setting of each winning: those headers are in
// the key, and an edit of one was served the binary first built. A
// forced include is in it where no package of the module uses cgo, which
// runtime/cgo's compile reads all the same.
func TestModuleKeyCgoEnvFlags(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#include <e.h>\n#include \"q.h\"\n#include <s.h>\n#include <after.h>\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "helper.cc"), "#include <x.h>\n")
	for _, h := range []string{"e inc/e.h", "old/e.h", "q/q.h", "s/s.h", "after/after.h", "x/x.h", "forced.h", "e inc/unused.h"} {
		writeTestFile(t, filepath.Join(dir, h), "int x;\n")
	}
	g := &Go{Module: mod, Packages: []string{"."}, CGO: true, Env: []string{
		"CGO_CFLAGS=-I" + filepath.Join(dir, "old"),
		"CGO_CFLAGS=-O2 '-I" + filepath.Join(dir, "e inc") + "' -idirafter " + filepath.Join(dir, "after"),
		"CGO_CPPFLAGS=-iquote " + filepath.Join(dir, "q") + " -isystem" + filepath.Join(dir, "s") + " -include " + filepath.Join(dir, "forced.h"),
		"CGO_CXXFLAGS=-I" + filepath.Join(dir, "x"),
	}}
	checkGoKeyEdits(t, g, dir, []keyEdit{
		{filepath.Join("e inc", "e.h"), true},
		{filepath.Join("q", "q.h"), true},
		{filepath.Join("s", "s.h"), true},
		{filepath.Join("after", "after.h"), true},
		{filepath.Join("x", "x.h"), true},
		{"forced.h", true},
		{filepath.Join("old", "e.h"), false},
		{filepath.Join("e inc", "unused.h"), false},
	})
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\nimport \"net\"\n\nfunc main() { net.Dial(\"tcp\", \"\") }\n")
	if err := os.Remove(filepath.Join(mod, "helper.cc")); err != nil {
		t.Fatal(err)
	}
	checkGoKeyEdits(t, g, dir, []keyEdit{{"forced.h", true}, {filepath.Join("e inc", "e.h"), false}})
}

// checkGoKeyEdits is checkKeyEdits with g's whole key.
func checkGoKeyEdits(t *testing.T, g *Go, dir string, edits []keyEdit) {
	t.Helper()
	f := New()
	key := func() string {
		t.Helper()
		k, _, err := g.Key(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(k, "\n")
	}
	before := key()
	for i, edit := range edits {
		old, err := os.ReadFile(filepath.Join(dir, edit.file))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, edit.file), string(old)+strings.Repeat("/* edited */\n", i+1))
		if after := key(); (after != before) != edit.changes {
			t.Errorf("%s edited: the key changed %v, want %v", edit.file, after != before, edit.changes)
		} else {
			before = after
		}
	}
}

// splitEnvFlags splits as the go command's quoted.Split: quotes around a
// whole element only, no escapes; an unterminated quote is no flags.
func TestSplitEnvFlags(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  -O2\t-g\n", []string{"-O2", "-g"}},
		{`'-I/a b' "-I/c d" -I/e`, []string{"-I/a b", "-I/c d", "-I/e"}},
		{`-I"/a b"`, []string{`-I"/a`, `b"`}},
		{`-I\ x`, []string{`-I\`, "x"}},
		{`'x`, nil},
	} {
		if got := splitEnvFlags(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitEnvFlags(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// parseIncludes reads C as gcc's first phases leave it, fed whole or a
// byte at a time: a backslash joins lines (white space, \r, before the
// newline too), a comment is a space (a "/" and "*" a backslash splits
// start one), "/*" in a literal (a quote escaped, a '"') starts none, a
// raw string's lines are its text, and a group below #if 0 is skipped
// to its #else, #elif or #endif, nested conditionals counted.
func TestParseIncludesAsGccReads(t *testing.T) {
	text := "#include \"a.h\"\n" +
		"#in\\  \r\nclude <b.h>\n" +
		"/\\\n* #include \"no1.h\" */\n" +
		"const char *s = \"\\\"/*\"; const char c = '\"';\n/* x\n#include \"no2.h\"\n*/ #include \"c.h\"\n" +
		"const char *r = LR\"d(\n#include \"no3.h\" )d\"\n)d\";\n" +
		"#if 0\n#include \"no4.h\"\n#ifdef X\n#else\n#include \"no5.h\"\n#endif\n#elif Y\n#include \"d.h\"\n#endif\n" +
		"# /* c */ if /* c */ 0 // c\n#include \"no6.h\"\n#else\n#include \"e.h\"\n#endif\n" +
		"#if 0x0\n#include \"f.h\"\n#endif\n" +
		"#define LONG \"" + strings.Repeat("x", maxDirectiveLine) + "\"\n" +
		"// #include \"no7.h\" \\\n#include \"no8.h\"\n" +
		"#include \\\n  MACRO\n"
	want := []cInclude{{name: "a.h", quoted: true}, {name: "b.h"}, {name: "c.h", quoted: true}, {name: "d.h", quoted: true}, {name: "e.h", quoted: true}, {name: "f.h", quoted: true}, {name: "MACRO", macro: true}}
	// parseIncludes reads raw strings as strict C does too, where
	// LR"d( is no raw string's start and no3.h is included.
	if got, want := parseIncludes(text), append(slices.Clone(want), cInclude{name: "no3.h", quoted: true}); !slices.Equal(got, want) {
		t.Errorf("fed whole: %v, want %v", got, want)
	}
	var got []cInclude
	var z ifZero
	c := newCLines(func(line []byte) {
		if inc, ok := includeOf(string(line)); z.live(line) && ok {
			got = append(got, inc)
		}
	})
	for i := range len(text) {
		c.feed([]byte{text[i]})
	}
	c.finish()
	if !slices.Equal(got, want) {
		t.Errorf("fed a byte at a time: %v, want %v", got, want)
	}
	if got := parseIncludes("#include \"last.h\""); !slices.Equal(got, []cInclude{{name: "last.h", quoted: true}}) {
		t.Errorf("an include with no newline after it: %v", got)
	}
}

// A package's #cgo pkg-config lines have pkg-config asked, with the
// recipe's PKG_CONFIG_PATH, as go build asks it: the headers its -I
// directories give are in the key, and its answer is, in the key and
// in what go build's cache is told (which hashes neither): a header
// there or the .pc file edited was served the binary first built.
func TestModuleKeyCgoPkgConfig(t *testing.T) {
	if _, err := exec.LookPath("pkg-config"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("pkg-config is not installed; .ci/run must install it")
		}
		t.Skip("pkg-config is not installed; skipping")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo pkg-config: --static foo\n// #include <foo.h>\nimport \"C\"\n\nfunc main() {}\n")
	pc := func(def string) {
		writeTestFile(t, filepath.Join(dir, "pc", "foo.pc"), "prefix="+filepath.Join(dir, "foo inc")+"\nName: foo\nDescription: foo\nVersion: 1\nCflags: -I\"${prefix}\" -DFOO="+def+"\n")
	}
	pc("1")
	writeTestFile(t, filepath.Join(dir, "foo inc", "foo.h"), "#include \"sub.h\"\n")
	writeTestFile(t, filepath.Join(dir, "foo inc", "sub.h"), "int sub;\n")
	writeTestFile(t, filepath.Join(dir, "foo inc", "unused.h"), "int unused;\n")
	g := &Go{Module: mod, Packages: []string{"."}, CGO: true, Env: []string{"PKG_CONFIG_PATH=" + filepath.Join(dir, "pc")}}
	checkGoKeyEdits(t, g, dir, []keyEdit{
		{filepath.Join("foo inc", "foo.h"), true},
		{filepath.Join("foo inc", "sub.h"), true},
		{filepath.Join("foo inc", "unused.h"), false},
	})
	f := New()
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	keyAndDigest := func() (string, string) {
		t.Helper()
		k, _, err := g.Key(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		reads, err := f.cgoHeadersRead(mod, g.Packages, g.cgoEnv())
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.cgoHeadersDigest(reads, g, p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(k, "\n"), d
	}
	k1, d1 := keyAndDigest()
	pc("2")
	k2, d2 := keyAndDigest()
	if k1 == k2 {
		t.Error("foo.pc's Cflags edited: the key is as it was")
	}
	if d1 == d2 {
		t.Error("foo.pc's Cflags edited: what go build's cache is told is as it was")
	}
}
