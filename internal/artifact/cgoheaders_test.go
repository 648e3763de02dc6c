package artifact_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
)

// A cgo build whose C reads headers outside its module, with no link to
// them (one in a directory of the package's #cgo flags whose name has a
// space, one a .c file of the package includes by "../"), is built
// again when one of them changes: the cache gave the binary first
// built. One with nothing changed, or headers nothing includes, is taken
// from the cache. (That the binary then says what the headers now hold,
// which go build's own cache does not see, golang.org/issue/24355, is
// TestGoCgoHeaderOutsideModuleBinary's.)
func TestGoCgoHeaderOutsideModuleRebuilt(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc is not installed; .ci/run must install it")
		}
		t.Skip("gcc is not installed; skipping")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	for name, text := range map[string]string{
		"mod/go.mod":      "module example.com/cgohdr\n\ngo 1.22\n",
		"mod/main.go":     "package main\n\n/*\n#cgo CFLAGS: -I\"${SRCDIR}/../my inc\"\n#include <a.h>\nint b(void);\nstatic int sum(void) { return A + b(); }\n*/\nimport \"C\"\n\nfunc main() { println(C.sum()) }\n",
		"mod/b.c":         "#include \"../cside/b.h\"\nint b(void) { return B; }\n",
		"my inc/a.h":      "#define A 1\n",
		"cside/b.h":       "#define B 10\n",
		"cside/unused.h":  "#define UNUSED 1\n",
		"my inc/unused.h": "#define UNUSED 1\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := cachedFetcher(t)
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	r := &artifact.Request{Name: "cgohdr", Platform: p, NoLicense: true,
		Kind: &artifact.Go{Module: mod, Packages: []string{"."}, CGO: true, CC: "gcc"}}
	build := func(what string, cached bool) {
		t.Helper()
		res, err := f.Fetch(context.Background(), r, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Cached != cached {
			t.Errorf("%s: from the cache %v, want %v", what, res.Cached, cached)
		}
		e, ok := res.Tree.Get("cgohdr")
		if !ok {
			t.Fatalf("%s: no binary cgohdr in the result", what)
		}
		if out, err := exec.Command(e.Source).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) == "" {
			t.Errorf("%s: the binary says %q (%v)", what, out, err)
		}
	}
	build("first", false)
	build("nothing changed", true)
	for _, unused := range []string{"cside/unused.h", "my inc/unused.h"} {
		if err := os.WriteFile(filepath.Join(dir, unused), []byte("#define UNUSED 2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build("headers nothing includes edited", true)
	if err := os.WriteFile(filepath.Join(dir, "my inc", "a.h"), []byte("#define A 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build("my inc/a.h edited", false)
	if err := os.WriteFile(filepath.Join(dir, "cside", "b.h"), []byte("#define B 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build("cside/b.h edited", false)
}

// A cgo build whose values come from headers go build's own cache does
// not hash (one outside the module, ../inc/v.h, and one in a directory
// of the module that is not the package's, sub/w.h) prints the values
// the headers now hold after each edit, built through the same caches:
// go build gave the object compiled from the old header, and the image
// shipped the old code. Built again with nothing changed, or from a copy
// of the whole tree at another path, the binary is the same, byte for
// byte, and holds nothing of how the headers were told to go build.
func TestGoCgoHeaderOutsideModuleBinary(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc is not installed; .ci/run must install it")
		}
		t.Skip("gcc is not installed; skipping")
	}
	files := map[string]string{
		"mod/go.mod":    "module example.com/cgoval\n\ngo 1.22\n",
		"mod/main.go":   "package main\n\n/*\n#include \"../inc/v.h\"\n#include \"sub/w.h\"\nstatic int value(void) { return V; }\nstatic int wvalue(void) { return W; }\n*/\nimport \"C\"\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(C.value(), C.wvalue()) }\n",
		"mod/sub/w.h":   "#define W 10\n",
		"inc/v.h":       "#define V 1\n",
		"inc/unused.h":  "#define UNUSED 1\n",
		"mod/sub/u.txt": "not included\n",
	}
	write := func(root string) {
		t.Helper()
		for name, text := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	write(dir)
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	build := func(f *artifact.Fetcher, root, what, want string) []byte {
		t.Helper()
		r := &artifact.Request{Name: "cgoval", Platform: p, NoLicense: true,
			Kind: &artifact.Go{Module: filepath.Join(root, "mod"), Packages: []string{"."}, CGO: true, CC: "gcc", Trimpath: true}}
		res, err := f.Fetch(context.Background(), r, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		e, ok := res.Tree.Get("cgoval")
		if !ok {
			t.Fatalf("%s: no binary cgoval in the result", what)
		}
		out, err := exec.Command(e.Source).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: the binary: %v\n%s", what, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: the binary says %q, want %q", what, got, want)
		}
		bin, err := os.ReadFile(e.Source)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(bin), "PALLET") {
			t.Errorf("%s: the binary holds %q", what, "PALLET")
		}
		return bin
	}
	f := cachedFetcher(t)
	first := build(f, dir, "first", "1 10")
	if again := build(cachedFetcher(t), dir, "nothing changed, another pallet cache", "1 10"); !bytes.Equal(again, first) {
		t.Error("built again with nothing changed: another binary")
	}
	moved := t.TempDir()
	write(moved)
	if there := build(cachedFetcher(t), moved, "the tree at another path", "1 10"); !bytes.Equal(there, first) {
		t.Error("built from the tree at another path: another binary")
	}
	edit := func(name, text string) {
		t.Helper()
		files[name] = text
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("inc/unused.h", "#define UNUSED 2\n")
	if same := build(f, dir, "a header nothing includes edited", "1 10"); !bytes.Equal(same, first) {
		t.Error("a header nothing includes edited: another binary")
	}
	edit("inc/v.h", "#define V 2\n")
	build(f, dir, "inc/v.h edited", "2 10")
	edit("mod/sub/w.h", "#define W 20\n")
	build(f, dir, "mod/sub/w.h edited", "2 20")
	edit("inc/v.h", "#define V 1\n")
	build(f, dir, "inc/v.h edited back", "1 20")
}

// A git source's cgo build reads a header of the checkout outside its
// module (../inc/v.h) from a new checkout each commit, which go build's
// own cache, with trimpath, did not tell apart: the commit that changes
// the header prints its new value.
func TestGitCgoHeaderOutsideModuleBinary(t *testing.T) {
	for _, tool := range []string{"gcc", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run must install it", tool)
			}
			t.Skipf("%s is not installed; skipping", tool)
		}
	}
	repo, first := committedRepo(t, map[string]string{
		"mod/go.mod":  "module example.com/gitcgo\n\ngo 1.22\n",
		"mod/main.go": "package main\n\n/*\n#include \"../inc/v.h\"\nstatic int value(void) { return V; }\n*/\nimport \"C\"\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(C.value()) }\n",
		"inc/v.h":     "#define V 1\n",
	})
	if err := os.WriteFile(filepath.Join(repo, "inc", "v.h"), []byte("#define V 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "commit", "-q", "-a", "-m", "two")
	second := fixture.Git(t, repo, "rev-parse", "HEAD")
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f := cachedFetcher(t)
	for _, c := range []struct{ commit, want string }{{first, "1"}, {second, "2"}} {
		k := &artifact.Git{Repo: repo, Commit: c.commit, Go: artifact.Go{Module: "mod", Packages: []string{"."}, CGO: true, CC: "gcc", Trimpath: true}}
		res, err := f.Fetch(context.Background(), &artifact.Request{Name: "gitcgo", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		e, ok := res.Tree.Get("gitcgo")
		if !ok {
			t.Fatal("no binary gitcgo in the result")
		}
		out, err := exec.Command(e.Source).CombinedOutput()
		if err != nil {
			t.Fatalf("the binary: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("commit with V %s: the binary says %q", c.want, got)
		}
	}
}

// A cgo build whose headers are found only through the recipe's env
// (CGO_CFLAGS=-I/.../inc, CGO_CPPFLAGS=-include /.../forced.h, which the
// go command puts before every cgo package's own flags, the standard
// library's too, so that a relative path fails) is built again when
// one of them changes, and the binary says what they now hold: neither
// the key nor what go build's cache was told covered them, and the
// cache gave the binary first built.
func TestGoCgoEnvFlagsHeaders(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc is not installed; .ci/run must install it")
		}
		t.Skip("gcc is not installed; skipping")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mod/go.mod", "module example.com/cgoenv\n\ngo 1.22\n")
	write("mod/main.go", "package main\n\n/*\n#include <v.h>\nstatic int value(void) { return V; }\nstatic int forced(void) { return F; }\n*/\nimport \"C\"\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(C.value(), C.forced()) }\n")
	write("inc/v.h", "#define V 1\n")
	write("inc/unused.h", "#define UNUSED 1\n")
	write("forced.h", "#define F 10\n")
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f := cachedFetcher(t)
	r := &artifact.Request{Name: "cgoenv", Platform: p, NoLicense: true,
		Kind: &artifact.Go{Module: filepath.Join(dir, "mod"), Packages: []string{"."}, CGO: true, CC: "gcc", Trimpath: true,
			Env: []string{"CGO_CFLAGS=-O2 -g -I" + filepath.Join(dir, "inc"), "CGO_CPPFLAGS=-include " + filepath.Join(dir, "forced.h")}}}
	build := func(what string, cached bool, want string) {
		t.Helper()
		res, err := f.Fetch(context.Background(), r, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Cached != cached {
			t.Errorf("%s: from the cache %v, want %v", what, res.Cached, cached)
		}
		e, ok := res.Tree.Get("cgoenv")
		if !ok {
			t.Fatalf("%s: no binary cgoenv in the result", what)
		}
		out, err := exec.Command(e.Source).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: the binary: %v\n%s", what, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: the binary says %q, want %q", what, got, want)
		}
	}
	build("first", false, "1 10")
	build("nothing changed", true, "1 10")
	write("inc/unused.h", "#define UNUSED 2\n")
	build("a header nothing includes edited", true, "1 10")
	write("inc/v.h", "#define V 2\n")
	build("inc/v.h, found through CGO_CFLAGS, edited", false, "2 10")
	write("forced.h", "#define F 20\n")
	build("forced.h, named by CGO_CPPFLAGS, edited", false, "2 20")
}

// A cgo build whose package names a library by #cgo pkg-config (a .pc
// file on the recipe's PKG_CONFIG_PATH) is built again when the header
// pkg-config's -I leads to, or the .pc file's Cflags, change, and the
// binary says what they now hold: go build's own cache hashes neither
// pkg-config's answer nor the headers, and gave the old object.
func TestGoCgoPkgConfigHeaders(t *testing.T) {
	for _, tool := range []string{"gcc", "pkg-config"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run must install it", tool)
			}
			t.Skipf("%s is not installed; skipping", tool)
		}
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pc := func(def string) {
		write("pc/foo.pc", "prefix="+filepath.Join(dir, "foo")+"\nName: foo\nDescription: foo\nVersion: 1\nCflags: -I${prefix}/include -DFOO="+def+"\n")
	}
	write("mod/go.mod", "module example.com/cgopc\n\ngo 1.22\n")
	write("mod/main.go", "package main\n\n/*\n#cgo pkg-config: foo\n#include <foo.h>\nstatic int value(void) { return V; }\nstatic int foo(void) { return FOO; }\n*/\nimport \"C\"\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(C.value(), C.foo()) }\n")
	write("foo/include/foo.h", "#define V 1\n")
	pc("10")
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f := cachedFetcher(t)
	r := &artifact.Request{Name: "cgopc", Platform: p, NoLicense: true,
		Kind: &artifact.Go{Module: filepath.Join(dir, "mod"), Packages: []string{"."}, CGO: true, CC: "gcc", Trimpath: true,
			Env: []string{"PKG_CONFIG_PATH=" + filepath.Join(dir, "pc")}}}
	build := func(what string, cached bool, want string) {
		t.Helper()
		res, err := f.Fetch(context.Background(), r, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Cached != cached {
			t.Errorf("%s: from the cache %v, want %v", what, res.Cached, cached)
		}
		e, ok := res.Tree.Get("cgopc")
		if !ok {
			t.Fatalf("%s: no binary cgopc in the result", what)
		}
		out, err := exec.Command(e.Source).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: the binary: %v\n%s", what, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: the binary says %q, want %q", what, got, want)
		}
	}
	build("first", false, "1 10")
	build("nothing changed", true, "1 10")
	write("foo/include/foo.h", "#define V 2\n")
	build("foo.h, found through pkg-config's -I, edited", false, "2 10")
	pc("20")
	build("foo.pc's Cflags edited", false, "2 20")
}
