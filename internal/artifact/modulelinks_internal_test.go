package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A go module's cache key reads what its links lead to outside it within
// maxKeyFiles and maxKeyBytes, and says which link led past them:
// a link to /usr had every build hash all of it, one to /proc failed
// with an error naming neither the module nor the link (or, where the
// walk got that far, hashed /proc/kcore, the size of the address space).
func TestModuleKeyThroughLinksBounded(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	for i := range 5 {
		writeTestFile(t, filepath.Join(dir, "big", "d", string(rune('a'+i))+".go"), strings.Repeat("x", 100))
	}
	writeTestFile(t, filepath.Join(dir, "large.go"), strings.Repeat("x", 1000))
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(mod, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(dir, "big"), "big")
	link(filepath.Join(dir, "large.go"), "large.go")
	// A link within the module is walked once, and counted once.
	writeTestFile(t, filepath.Join(mod, "pkg", "a.go"), strings.Repeat("y", 2000))
	link("pkg", "alias")
	f := &Fetcher{}
	if _, err := moduleKey(f, mod); err != nil {
		t.Fatalf("within the limits: %v", err)
	}
	setLimits := func(files int, bytes int64) {
		oldFiles, oldBytes := maxKeyFiles, maxKeyBytes
		maxKeyFiles, maxKeyBytes = files, bytes
		t.Cleanup(func() { maxKeyFiles, maxKeyBytes = oldFiles, oldBytes })
	}
	// Walked in order: alias/a.go (2000 bytes), big's five files (100
	// each), go.mod, large.go (1000).
	setLimits(4, 1<<20)
	_, err := moduleKey(f, mod)
	if want := "go module " + mod + ": big, a link to " + filepath.Join(dir, "big") + ": more than 4 files in the module"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("8 files, 4 allowed: %v, want an error saying %q", err, want)
	}
	setLimits(100, 3000)
	_, err = moduleKey(f, mod)
	if want := "more than 3000 bytes in the module, the directories it replaces modules with and what their links lead to (at " + filepath.Join(dir, "large.go") + ", 1000 bytes)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("3521 bytes, 3000 allowed: %v, want an error saying %q", err, want)
	}

	// A link to /proc is refused before any of it is read (see
	// TestModuleKeyReadsNoKernelFiles), naming the link.
	if _, err := os.Stat("/proc/kcore"); err != nil {
		return
	}
	proc := t.TempDir()
	writeTestFile(t, filepath.Join(proc, "go.mod"), "module example.com/p\n")
	if err := os.Symlink("/proc", filepath.Join(proc, "p")); err != nil {
		t.Fatal(err)
	}
	setLimits(100_000, 4<<30)
	_, err = moduleKey(f, proc)
	if want := "go module " + proc + ": p, a link to /proc: /proc is on the kernel's proc filesystem"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a link to /proc: %v, want an error saying %q", err, want)
	}
}

// Links that lead back to where they were read from are walked once:
// the key is made, and covers what they lead to (held before).
func TestModuleKeyThroughLinkCycles(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(dir, "ext", "a", "a.go"), "package a\n")
	writeTestFile(t, filepath.Join(dir, "ext", "b", "b.go"), "package b\n")
	for name, target := range map[string]string{
		filepath.Join(mod, "a"):               filepath.Join(dir, "ext", "a"),
		filepath.Join(mod, "self"):            ".",
		filepath.Join(mod, "up"):              "..",
		filepath.Join(mod, "root"):            "/",
		filepath.Join(mod, "dangling"):        "nowhere",
		filepath.Join(dir, "ext", "a", "tob"): filepath.Join("..", "b"),
		filepath.Join(dir, "ext", "b", "toa"): filepath.Join("..", "a"),
		filepath.Join(dir, "ext", "a", "me"):  ".",
	} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	f := &Fetcher{}
	before, err := moduleKey(f, mod)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "ext", "b", "b.go"), "package b // edited\n")
	after, err := moduleKey(f, mod)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Error("an edit in a directory reached through two links left the key as it was")
	}
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The limits hold for all a key reads, not only through links: a module
// or a directory its go.mod replaces a module with (at /, or a tree as
// large) was walked whole, however large. The module and its replace
// directories share them, and the error blames the recipe's module line.
func TestModuleKeyBounded(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n\nrequire example.com/r v0.0.0\n\nreplace example.com/r => ../r\n")
	for i := range 3 {
		writeTestFile(t, filepath.Join(mod, "p", string(rune('a'+i))+".go"), "package p\n")
		writeTestFile(t, filepath.Join(dir, "r", string(rune('a'+i))+".go"), "package r\n")
	}
	writeTestFile(t, filepath.Join(dir, "r", "go.mod"), "module example.com/r\n")
	f := &Fetcher{}
	if _, err := f.localModulesDigest(mod, nil, true, cgoEnvFlags{}); err != nil {
		t.Fatalf("within the limits: %v", err)
	}
	oldFiles, oldBytes := maxKeyFiles, maxKeyBytes
	t.Cleanup(func() { maxKeyFiles, maxKeyBytes = oldFiles, oldBytes })

	maxKeyFiles = 3
	_, err := moduleKey(f, mod)
	var fe *FieldError
	if want := "go module " + mod + ": more than 3 files in the module"; err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &fe) || fe.Field != "module" {
		t.Errorf("a module of 4 files, 3 allowed: %v, want an error blaming module saying %q", err, want)
	}
	// Each alone is within 5 files; the two are not.
	maxKeyFiles = 5
	if _, err := moduleKey(f, filepath.Join(dir, "r")); err != nil {
		t.Fatalf("the replace directory alone, within the limits: %v", err)
	}
	_, err = f.localModulesDigest(mod, nil, true, cgoEnvFlags{})
	if want := "go module " + filepath.Join(dir, "r") + ": more than 5 files in the module"; err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &fe) || fe.Field != "module" {
		t.Errorf("a module and its replace directory of 8 files, 5 allowed: %v, want an error blaming module saying %q", err, want)
	}
	maxKeyFiles, maxKeyBytes = 100, 30
	_, err = moduleKey(f, mod)
	if want := "more than 30 bytes in the module"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a module of 100 bytes, 30 allowed: %v, want an error saying %q", err, want)
	}
}

// moduleKey is what the key of a go build of the module in dir takes of
// its files.
func moduleKey(f *Fetcher, dir string) (string, error) {
	sums, err := f.localModulesDigest(dir, nil, true, cgoEnvFlags{})
	return strings.Join(sums, "\n"), err
}

// A link to a directory that holds the module (up -> .., or an absolute
// one) is followed for the packages go build imports through it, and
// what they import in turn: only its target as written was in the key,
// and an edit in such a package was served the binary first built. What
// nothing imports through it is not read (a link to / costs nothing).
func TestModuleKeyThroughLinksUp(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m/up/shared/lib\"\n)\n\nfunc main() { fmt.Println(lib.Name) }\n")
	writeTestFile(t, filepath.Join(dir, "shared", "lib", "lib.go"), "package lib\n\nimport \"example.com/m/abs/more\"\n\nconst Name = more.Name\n")
	writeTestFile(t, filepath.Join(dir, "shared", "lib", "static", "page.html"), "one\n")
	writeTestFile(t, filepath.Join(dir, "more", "more.go"), "package more\n\nconst Name = \"one\"\n")
	writeTestFile(t, filepath.Join(dir, "unused", "unused.go"), "package unused\n")
	for name, target := range map[string]string{"up": "..", "abs": dir, "root": "/"} {
		if err := os.Symlink(target, filepath.Join(mod, name)); err != nil {
			t.Fatal(err)
		}
	}
	checkKeyEdits(t, &Fetcher{}, mod, dir, []keyEdit{
		{filepath.Join("more", "more.go"), true},
		{filepath.Join("shared", "lib", "static", "page.html"), true},
		{filepath.Join("shared", "lib", "lib.go"), true},
		{filepath.Join("unused", "unused.go"), false},
	})
}

// The main module's files import through the links up of a module its
// go.mod replaces with a directory, as go build resolves the replaced
// module's import paths there.
func TestModuleKeyThroughReplacedLinksUp(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n\nrequire example.com/r v0.0.0\n\nreplace example.com/r => ../r\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\nimport \"example.com/r/up/lib\"\n\nfunc main() { println(lib.Name) }\n")
	writeTestFile(t, filepath.Join(dir, "r", "go.mod"), "module example.com/r\n")
	writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"one\"\n")
	if err := os.Symlink("..", filepath.Join(dir, "r", "up")); err != nil {
		t.Fatal(err)
	}
	f := &Fetcher{}
	before, err := moduleKey(f, mod)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"two\"\n")
	if after, err := moduleKey(f, mod); err != nil || after == before {
		t.Errorf("a package imported through a replaced module's link up changed: the key changed %v (%v)", after != before, err)
	}
}

// A package the recipe names through a link up (packages: ./up/tool, as
// a path, an import path or a pattern) is compiled by go build though no
// Go file imports it: only what the modules' files import through the
// link was keyed, and an edit of the tool itself, or of what it imports,
// was served the binary first built.
func TestModuleKeyThroughLinksUpOfItsPackages(t *testing.T) {
	for _, pkg := range []string{"./up/shared/cmd/tool", "example.com/m/up/shared/cmd/tool", "./up/shared/cmd/..."} {
		dir := t.TempDir()
		mod := filepath.Join(dir, "mod")
		writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
		writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\nfunc main() {}\n")
		writeTestFile(t, filepath.Join(dir, "shared", "cmd", "tool", "main.go"), "package main\n\nimport \"example.com/m/up/lib\"\n\nfunc main() { println(lib.Name) }\n")
		writeTestFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"one\"\n")
		if err := os.Symlink("..", filepath.Join(mod, "up")); err != nil {
			t.Fatal(err)
		}
		g := &Go{Module: mod, Packages: []string{pkg}}
		f := &Fetcher{}
		key := func() string {
			t.Helper()
			k, _, err := g.Key(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(k, "\n")
		}
		before := key()
		// lib.go first: the edit of main.go takes away its import.
		for _, file := range []string{filepath.Join("lib", "lib.go"), filepath.Join("shared", "cmd", "tool", "main.go")} {
			writeTestFile(t, filepath.Join(dir, file), "// edited\n")
			after := key()
			if after == before {
				t.Errorf("packages: %s, %s edited: the key is as it was", pkg, file)
			}
			before = after
		}
	}
}
