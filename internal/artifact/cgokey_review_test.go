package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// keyWithin is moduleKey of mod, failing the test if it takes longer
// than a minute: what is asked of is that the key ends at all (a read of
// a pipe or a device waits forever), not how fast.
func keyWithin(t *testing.T, f *Fetcher, mod string) (string, error) {
	t.Helper()
	type res struct {
		k   string
		err error
	}
	done := make(chan res, 1)
	go func() {
		k, err := moduleKey(f, mod)
		done <- res{k, err}
	}()
	select {
	case r := <-done:
		return r.k, r.err
	case <-time.After(time.Minute):
		t.Fatal("the key has not ended after a minute")
		return "", nil
	}
}

// A cgo package's include of something that is no regular file (a
// device, a named pipe, a directory, a link to itself, a link to a
// device) is passed by, as gcc passes by or fails on it: the key opens
// none, ends, and keys none of them.
func TestCgoKeyReviewNonRegularIncludes(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo CFLAGS: -I${SRCDIR}/../inc\n#include \"/dev/zero\"\n#include \"../fifo.h\"\n#include <fifo.h>\n#include \"../dir.h\"\n#include \"../loop.h\"\n#include <zero.h>\n#include \"../real.h\"\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "helper.c"), "#include \"../fifo.h\"\n#include \"/dev/zero\"\n")
	writeTestFile(t, filepath.Join(dir, "real.h"), "int real;\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.h"), 0o644); err != nil {
		t.Skipf("no named pipe: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "inc", "fifo.h"), 0o644); err != nil {
		if err := os.MkdirAll(filepath.Join(dir, "inc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, "inc", "fifo.h"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "dir.h"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop.h", filepath.Join(dir, "loop.h")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "inc", "zero.h")); err != nil {
		t.Fatal(err)
	}
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatalf("includes of a device, a pipe, a directory and a link loop: %v", err)
	}
	writeTestFile(t, filepath.Join(dir, "real.h"), "int real, edited;\n")
	if after, err := keyWithin(t, f, mod); err != nil || after == before {
		t.Errorf("real.h, included beside them, edited: the key changed %v (%v)", after != before, err)
	}
}

// A header that cannot be opened fails the key, naming it. Root opens
// any file whatever its mode, and a regular file that root cannot open
// is not to be made here.
func TestCgoKeyReviewUnreadableHeader(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("run as root, which opens a file of mode 000: no unreadable header to make")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../secret.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "secret.h"), "int secret;\n")
	if err := os.Chmod(filepath.Join(dir, "secret.h"), 0); err != nil {
		t.Fatal(err)
	}
	_, err := keyWithin(t, New(), mod)
	t.Logf("an unreadable header: %v", err)
	if err == nil || !strings.Contains(err.Error(), "C header "+mod+"/../secret.h, included by "+mod) || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("an unreadable header: %v, want an error naming it, its includer and the open's error", err)
	}
}

// -I/proc and -I/sys cost nothing where no header is in them; one that
// is, is refused, naming the includer and the header, not read.
func TestCgoKeyReviewKernelSearchDirs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kernel filesystems are Linux's")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I/proc -I/sys\n// #include <no-such-review.h>\nimport \"C\"\n\nfunc main() {}\n")
	if _, err := keyWithin(t, New(), mod); err != nil {
		t.Errorf("-I/proc -I/sys, no header in them: %v", err)
	}
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I/proc -I/sys\n// #include <version>\nimport \"C\"\n\nfunc main() {}\n")
	_, err := keyWithin(t, New(), mod)
	if err == nil || !strings.Contains(err.Error(), "/proc/version") || !strings.Contains(err.Error(), "included by "+mod) {
		t.Errorf("-I/proc and #include <version>: %v, want a refusal naming /proc/version and its includer", err)
	}
}

// -I/ costs the headers named, not the world; with a header named by a
// macro it lists the directories to the budget and stops there, naming
// the includer and the directory.
func TestCgoKeyReviewRootSearchDir(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I/\n// #include <no-such-review.h>\n// #include <"+strings.TrimPrefix(filepath.Join(dir, "named.h"), "/")+">\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "named.h"), "int named;\n")
	defer func(n int) { maxKeyFiles = n }(maxKeyFiles)
	// The module's two files, and the one header.
	maxKeyFiles = 3
	if _, err := keyWithin(t, New(), mod); err != nil {
		t.Errorf("-I/, one header named in it, 3 files allowed: %v", err)
	}
	maxKeyFiles = 1000
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I/\n// #include CONFIG\nimport \"C\"\n\nfunc main() {}\n")
	_, err := keyWithin(t, New(), mod)
	if err == nil || !strings.Contains(err.Error(), "named by a macro") || !strings.Contains(err.Error(), "below /") || !strings.Contains(err.Error(), mod) {
		t.Errorf("-I/ and a macro include: %v, want it refused at the budget, naming the includer and /", err)
	}
}

// Headers that include each other are each read once, and keyed.
func TestCgoKeyReviewIncludeCycle(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../a.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "a.h"), "#pragma once\n#include \"b.h\"\n#include \"a.h\"\n")
	writeTestFile(t, filepath.Join(dir, "b.h"), "#pragma once\n#include \"a.h\"\n")
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "b.h"), "#pragma once\n#include \"a.h\"\nint edited;\n")
	if after, err := keyWithin(t, f, mod); err != nil || after == before {
		t.Errorf("b.h, in a cycle with a.h, edited: the key changed %v (%v)", after != before, err)
	}
}

// A chain of 3,000 headers, each including the next, is followed to its
// end without recursion; past the budget it fails naming the header it
// stopped at and what included it.
func TestCgoKeyReviewLongChain(t *testing.T) {
	const n = 3_000
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../chain/0.h\"\nimport \"C\"\n\nfunc main() {}\n")
	for i := range n {
		writeTestFile(t, filepath.Join(dir, "chain", strconv.Itoa(i)+".h"), "#include \""+strconv.Itoa(i+1)+".h\"\n")
	}
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "chain", strconv.Itoa(n)+".h"), "int last;\n")
	if after, err := keyWithin(t, f, mod); err != nil || after == before {
		t.Errorf("the chain's last header made: the key changed %v (%v)", after != before, err)
	}
	defer func(m int) { maxKeyFiles = m }(maxKeyFiles)
	maxKeyFiles = n / 2
	_, err = keyWithin(t, New(), mod)
	var fe *FieldError
	if err == nil || !strings.Contains(err.Error(), "more than 1500 files") || !strings.Contains(err.Error(), "included by "+filepath.Join(dir, "chain")) || !errors.As(err, &fe) {
		t.Errorf("a chain of %d headers, %d files allowed: %v, want the budget's error naming the header and its includer", n, maxKeyFiles, err)
	}
}

// A header of 96 MiB (sparse: nothing on disk) is read for its
// includes with bounded memory, and what it includes is keyed: the
// first 64 MiB were read whole into memory, and past them none of its
// includes was followed, so that an edit of a header it included was
// served the binary first built.
func TestCgoKeyReviewHugeHeader(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 96 MiB three times; skipped in -short")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../big.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "first.h"), "int first;\n")
	writeTestFile(t, filepath.Join(dir, "last.h"), "int last;\n")
	big, err := os.Create(filepath.Join(dir, "big.h"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := big.WriteString("#include \"first.h\"\n"); err != nil {
		t.Fatal(err)
	}
	// Past the 64 MiB that were read whole before.
	if _, err := big.WriteAt([]byte("\n#include \"last.h\"\n"), 96<<20); err != nil {
		t.Fatal(err)
	}
	if err := big.Close(); err != nil {
		t.Fatal(err)
	}
	f := New()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	k, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// A quarter of what the file read whole would take: the bound is on
	// the order of the read, not its time.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("the key of a module including a 96 MiB header allocated %d MiB", alloc>>20)
	}
	for _, h := range []string{"first.h", "last.h"} {
		writeTestFile(t, filepath.Join(dir, h), "int "+strings.TrimSuffix(h, ".h")+", edited;\n")
		if k2, err := keyWithin(t, f, mod); err != nil || k2 == k {
			t.Errorf("%s, included by the 96 MiB header, edited: the key changed %v (%v)", h, k2 != k, err)
		} else {
			k = k2
		}
	}
}

// Headers and search directories whose names hold spaces, quotes,
// backslashes and bytes that are no UTF-8 (as a .c file may name them;
// a Go file's preamble must be UTF-8) are found and keyed as gcc reads
// them: a header name takes no escapes.
func TestCgoKeyReviewOddNames(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo CFLAGS: -I'${SRCDIR}/../in \"q\" dir' -I${SRCDIR}/../back\\\\slash\n#include <sp ace.h>\n#include <q\"uote.h>\n#include <b\\ack.h>\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "odd.c"), "#include \"../odd\xff\xfe/h\xe9.h\"\n")
	odd := []string{
		filepath.Join("in \"q\" dir", "sp ace.h"),
		filepath.Join("in \"q\" dir", "q\"uote.h"),
		filepath.Join("back\\slash", "b\\ack.h"),
		filepath.Join("odd\xff\xfe", "h\xe9.h"),
	}
	for _, h := range odd {
		writeTestFile(t, filepath.Join(dir, h), "int x;\n")
	}
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range odd {
		writeTestFile(t, filepath.Join(dir, h), "int x;\n"+strings.Repeat("/* edited */\n", i+1))
		if after, err := keyWithin(t, f, mod); err != nil || after == before {
			t.Errorf("%q edited: the key changed %v (%v)", h, after != before, err)
		} else {
			before = after
		}
	}
}

// A directory outside the module named "^", as the key names a step up,
// is no step up: ../../x.h and ../^/x.h are two headers, both keyed. The
// two had one name in the key, and the key failed where gcc builds.
func TestCgoKeyReviewCaretDirectory(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "a", "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../../x.h\"\n// #include \"../^/x.h\"\n// #include \"../^abs/y.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "x.h"), "int x;\n")
	writeTestFile(t, filepath.Join(dir, "a", "^", "x.h"), "int caret;\n")
	writeTestFile(t, filepath.Join(dir, "a", "^abs", "y.h"), "int y;\n")
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatalf("headers at ../../x.h and ../^/x.h: %v", err)
	}
	for i, h := range []string{"x.h", filepath.Join("a", "^", "x.h"), filepath.Join("a", "^abs", "y.h")} {
		writeTestFile(t, filepath.Join(dir, h), "int z;\n"+strings.Repeat("/* edited */\n", i+1))
		if after, err := keyWithin(t, f, mod); err != nil || after == before {
			t.Errorf("%s edited: the key changed %v (%v)", h, after != before, err)
		} else {
			before = after
		}
	}
}

// An #include in a C comment (across lines, or a // comment a backslash
// continues), in a string, or below #if 0 is not followed, as gcc does
// not read it: one was keyed as any other, and #include MACRO there had
// the key take every file of the search directories. One a backslash
// splits, or after a comment on its line, or in the #else of #if 0, is
// followed: the first was not seen at all. The key is not refused where
// a skipped header is not there.
func TestCgoKeyReviewIncludesGccSkips(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo CFLAGS: -I${SRCDIR}/../inc\n#if 0\n#include \"../ifzero.h\"\n#include \"../missing.h\"\n#include NOT_DEFINED\n#if X\n#endif\n#include \"../ifzero.h\"\n#else\n#include \"../else.h\"\n#endif\n// #include \"../slashed.h\"\n#inc\\\nlude \"../split.h\"\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "c.c"), "/*\n#include \"../commented.h\"\n#include NOT_DEFINED\n */\nconst char *s = \"\\\n#include \\\"../quoted.h\\\"\";\n// a note \\\n#include \"../continued.h\"\n/* a\n note */ #include \"../after.h\"\nconst char *r = R\"x(\n#include \"../raw.h\"\n)x\";\n")
	for _, h := range []string{"ifzero.h", "else.h", "slashed.h", "split.h", "commented.h", "quoted.h", "continued.h", "after.h", "raw.h", "inc/any.h"} {
		writeTestFile(t, filepath.Join(dir, h), "int x;\n")
	}
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatalf("includes gcc skips: %v", err)
	}
	for i, edit := range []struct {
		file  string
		keyed bool
	}{
		{"ifzero.h", false},
		{"else.h", true},
		{"commented.h", false},
		{"quoted.h", false},
		{"inc/any.h", false}, // a macro's directory, below #if 0 and in a comment
		{"slashed.h", false},
		{"split.h", true},
		{"continued.h", false},
		{"after.h", true},
		{"raw.h", true}, // strict C (-std=c11) reads no raw string, and includes it
	} {
		writeTestFile(t, filepath.Join(dir, edit.file), "int x;\n"+strings.Repeat("/* edited */\n", i+1))
		after, err := keyWithin(t, f, mod)
		if err != nil {
			t.Fatal(err)
		}
		if (after != before) != edit.keyed {
			t.Errorf("%s edited: the key changed %v, want %v", edit.file, after != before, edit.keyed)
		}
		before = after
	}
}

// A macro include's search directory reached through a link, or with a
// link to a directory below it, has the files gcc may open through them
// in the key: the walk of a link was the link alone, and an edit of the
// header the macro named was served the binary first built.
func TestCgoKeyReviewMacroIncludeThroughLinks(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n#cgo CFLAGS: -I${SRCDIR}/../inc -I${SRCDIR}/../other\n#include CONFIG\n*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "real", "conf.h"), "int conf;\n")
	writeTestFile(t, filepath.Join(dir, "sub", "deep.h"), "int deep;\n")
	writeTestFile(t, filepath.Join(dir, "other", "x.h"), "int x;\n")
	if err := os.Symlink("real", filepath.Join(dir, "inc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../sub", filepath.Join(dir, "other", "sub")); err != nil {
		t.Fatal(err)
	}
	// A link back up, which a walk that follows links must not loop on.
	if err := os.Symlink("..", filepath.Join(dir, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	f := New()
	before, err := keyWithin(t, f, mod)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range []string{filepath.Join("real", "conf.h"), filepath.Join("sub", "deep.h")} {
		writeTestFile(t, filepath.Join(dir, h), "int z;\n"+strings.Repeat("/* edited */\n", i+1))
		if after, err := keyWithin(t, f, mod); err != nil || after == before {
			t.Errorf("%s, which the macro may name through a link, edited: the key changed %v (%v)", h, after != before, err)
		} else {
			before = after
		}
	}
}

// A header that says one include many times, as a file of gigabytes
// may, costs the memory of the one: each line's include was held, and
// queued, once per line. One of more distinct includes than the key may
// read files fails, naming it and its includer.
func TestCgoKeyReviewManyIncludes(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../many.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "x.h"), "int x;\n")
	writeTestFile(t, filepath.Join(dir, "many.h"), strings.Repeat("#include \"x.h\"\n", 2<<20))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := keyWithin(t, New(), mod); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("the key of a header of 2M lines that include x.h allocated %d KiB", alloc>>10)
	// Under the file's own 30 MB: it was 4 GiB, for each line's include
	// held and queued.
	if alloc > 16<<20 {
		t.Errorf("the key of a header of 2M lines that include x.h allocated %d MiB", alloc>>20)
	}

	var distinct strings.Builder
	for i := range 1000 {
		distinct.WriteString("#include \"" + strconv.Itoa(i) + ".h\"\n")
	}
	writeTestFile(t, filepath.Join(dir, "many.h"), distinct.String())
	defer func(n int) { maxKeyFiles = n }(maxKeyFiles)
	maxKeyFiles = 100
	_, err := keyWithin(t, New(), mod)
	if err == nil || !strings.Contains(err.Error(), "C header "+mod+"/../many.h, included by "+mod) || !strings.Contains(err.Error(), "more than 100") {
		t.Errorf("a header of 1000 includes, 100 files allowed: %v, want an error naming it and its includer", err)
	}
}

// A preamble that says one include many times (or many cgo files that
// each include the same header) is followed once for it: each was
// queued and looked up again.
func TestCgoKeyReviewManyIncludesInPreamble(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n/*\n"+strings.Repeat("#include \"../x.h\"\n", 1<<20)+"*/\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "x.h"), "int x;\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := keyWithin(t, &Fetcher{}, mod); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("the key of a preamble of 1M includes of x.h allocated %d MiB", alloc>>20)
	// Parsing the 18 MB Go file takes some 500 MiB of garbage (go/parser
	// and the import reader, as for any Go file); the include queued
	// once per line took 2.5 GiB more.
	if alloc > 1<<30 {
		t.Errorf("the key of a preamble of 1M includes of x.h allocated %d MiB", alloc>>20)
	}
}
