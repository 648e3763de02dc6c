package artifact

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/platform"
)

// pcKeyFixture is a module whose cgo package includes foo.h through
// #cgo pkg-config: foo, and a PKG_CONFIG script in dir.
func pcKeyFixture(t *testing.T, script string) (dir string, g *Go) {
	t.Helper()
	dir = t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo pkg-config: foo\n// #include <foo.h>\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "inc", "foo.h"), "int foo;\n")
	pc := filepath.Join(dir, "pkg-config.sh")
	writeTestFile(t, pc, "#!/bin/sh\n"+script)
	if err := os.Chmod(pc, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, &Go{Module: mod, Packages: []string{"."}, CGO: true, Env: []string{"PKG_CONFIG=" + pc, "INC=" + filepath.Join(dir, "inc")}}
}

// A PKG_CONFIG that answers and exits, leaving a child of its own
// (a wrapper's helper started in the background) holding its output
// open: go build waits for the answer and compiles with it, so the key
// takes it too, where it took none and foo.h was out of the key.
func TestModuleKeyCgoPkgConfigAnswerPastChild(t *testing.T) {
	dir, g := pcKeyFixture(t, "echo \"-I$INC\"\nsleep 15 &\nexit 0\n")
	checkGoKeyEdits(t, g, dir, []keyEdit{{filepath.Join("inc", "foo.h"), true}})
}

// A PKG_CONFIG that hangs fails the key at pkgConfigTimeout, naming the
// Go file and line of the #cgo pkg-config line, where it named the
// package's directory alone.
func TestPkgConfigCflagsHangs(t *testing.T) {
	old := pkgConfigTimeout
	pkgConfigTimeout = 200 * time.Millisecond
	defer func() { pkgConfigTimeout = old }()
	dir, g := pcKeyFixture(t, "exec sleep 30\n")
	_, _, err := g.Key(New(), nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer within") || !strings.Contains(err.Error(), filepath.Join(dir, "mod", "main.go")+":3: #cgo pkg-config: ") {
		t.Fatalf("err = %v", err)
	}
	// In a block comment, after another file's preamble with none.
	writeTestFile(t, filepath.Join(dir, "mod", "a.go"), "package main\n\n// #include <stdio.h>\nimport \"C\"\n")
	writeTestFile(t, filepath.Join(dir, "mod", "main.go"), "package main\n\n/*\n#include <foo.h>\n\n\n#cgo linux pkg-config: foo\n*/\nimport \"C\"\n\nfunc main() {}\n")
	_, _, err = g.Key(New(), nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "mod", "main.go")+":7: #cgo pkg-config: ") {
		t.Fatalf("err = %v", err)
	}
}

// The key asks pkg-config with the target go build gives it (GOARCH,
// CC, ...), which a PKG_CONFIG for cross builds answers by: asked with
// none, its answer named no target's directory, and the target's header
// was out of the key.
func TestModuleKeyCgoPkgConfigSeesTarget(t *testing.T) {
	dir, g := pcKeyFixture(t, "echo \"-I$INC/$GOARCH\"\n")
	writeTestFile(t, filepath.Join(dir, "inc", runtime.GOARCH, "foo.h"), "int foo;\n")
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	key := func() string {
		t.Helper()
		k, _, err := g.Key(f, &Request{Platform: p})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(k, "\n")
	}
	before := key()
	writeTestFile(t, filepath.Join(dir, "inc", runtime.GOARCH, "foo.h"), "int foo2;\n")
	if key() == before {
		t.Errorf("inc/%s/foo.h, which pkg-config names for the target, edited: the key is as it was", runtime.GOARCH)
	}
}
