package artifact_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/platform"
)

// A cgo build whose C reads headers outside its module, with no link to
// them (one in a directory of the package's #cgo flags whose name has a
// space, one a .c file of the package includes by "../"), is built
// again when one of them changes: the cache gave the binary first
// built. One with nothing changed, or headers nothing includes, is taken
// from the cache. (What the binary then says is go build's: its own
// cache does not see such headers either, golang.org/issue/24355.)
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
