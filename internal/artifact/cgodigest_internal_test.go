package artifact

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/platform"
)

// A build without cgo (cgo: false, or CGO_ENABLED=0 in its env, which
// goEnv puts last) has no header in its key, and its modules' Go files,
// with no link up, are not read for their preambles: they took 0.5 s for
// a tree the size of GOROOT in every key, cgo off or not. A build with
// cgo (cgo: true, or CGO_ENABLED=1 in env) has them. Not parallel: it
// sets goSourceReadHook.
func TestModuleKeyCgoOff(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../inc/v.h\"\nimport \"C\"\n\nfunc main() { println(C.V) }\n")
	writeTestFile(t, filepath.Join(dir, "inc", "v.h"), "#define V 1\n")
	var mu sync.Mutex
	reads := 0
	goSourceReadHook = func(string) {
		mu.Lock()
		defer mu.Unlock()
		reads++
	}
	defer func() { goSourceReadHook = nil }()
	for i, c := range []struct {
		name string
		g    Go
		on   bool
	}{
		{"cgo: false", Go{CGO: false}, false},
		{"cgo: true, CGO_ENABLED=0", Go{CGO: true, Env: []string{"CGO_ENABLED=1", "CGO_ENABLED=0"}}, false},
		{"cgo: true", Go{CGO: true}, true},
		{"cgo: false, CGO_ENABLED=1", Go{CGO: false, Env: []string{"CGO_ENABLED=1"}}, true},
	} {
		c.g.Module, c.g.Packages = mod, []string{"."}
		f := New()
		key := func() []string {
			t.Helper()
			k, _, err := c.g.Key(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		mu.Lock()
		reads = 0
		mu.Unlock()
		before := key()
		mu.Lock()
		read := reads
		mu.Unlock()
		if (read > 0) != c.on {
			t.Errorf("%s: %d files read for their imports, want some %v", c.name, read, c.on)
		}
		// Another size each time: a stamp may not see an edit
		// within its granularity otherwise.
		writeTestFile(t, filepath.Join(dir, "inc", "v.h"), "#define V "+strconv.Itoa(i+2)+strings.Repeat(" ", i+1)+"\n")
		if changed := !slices.Equal(key(), before); changed != c.on {
			t.Errorf("%s: ../inc/v.h edited: the key changed %v, want %v", c.name, changed, c.on)
		}
	}
}

// What a build tells go build of its headers covers those its cache does
// not hash, and only those: none for a package whose headers are all
// in its directory (a header there is one of its files), so that its
// build runs as it did; one that the package includes from a directory
// of the module that is not its own (inc/v.h) or from outside it
// changes the digest when edited.
func TestCgoHeadersDigest(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"here.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "here.h"), "#define HERE 1\n")
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	g := &Go{Module: mod, Packages: []string{"."}, CGO: true}
	digest := func() string {
		t.Helper()
		reads, err := f.cgoHeadersRead(mod, g.Packages, g.cgoEnv())
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.cgoHeadersDigest(reads, g, p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := digest(); d != "" {
		t.Errorf("headers in the package's directory only: digest %q, want none", d)
	}
	for _, inc := range []struct{ file, include string }{
		{filepath.Join(mod, "inc", "v.h"), "inc/v.h"},
		{filepath.Join(dir, "out", "w.h"), "../out/w.h"},
	} {
		writeTestFile(t, inc.file, "#define X 1\n")
		writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"here.h\"\n// #include \""+inc.include+"\"\nimport \"C\"\n\nfunc main() {}\n")
		before := digest()
		if before == "" {
			t.Fatalf("%s included: no digest", inc.include)
		}
		writeTestFile(t, filepath.Join(mod, "here.h"), "#define HERE 22\n")
		if d := digest(); d != before {
			t.Errorf("here.h edited, with %s included: the digest changed", inc.include)
		}
		writeTestFile(t, inc.file, "#define X 222\n")
		if d := digest(); d == before {
			t.Errorf("%s edited: the digest is as it was", inc.include)
		}
	}
	if err := os.Remove(filepath.Join(dir, "out", "w.h")); err != nil {
		t.Fatal(err)
	}
}

// A local cgo build's module is walked for its headers by its keys
// alone (the one before the build and the one after), not a third time
// by the build for what it tells go build: the key's reads are handed
// on. One of them edited since the key was made is not taken, and the
// module is walked again. Not parallel: it sets walkModulesHook.
func TestCgoLocalBuildWalksOnce(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc is not installed; .ci/run must install it")
		}
		t.Skip("gcc is not installed; skipping")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n\ngo 1.22\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../inc/v.h\"\nimport \"C\"\n\nfunc main() { println(C.V) }\n")
	writeTestFile(t, filepath.Join(dir, "inc", "v.h"), "#define V 1\n")
	var mu sync.Mutex
	walks := 0
	walkModulesHook = func(d string) {
		if d == mod {
			mu.Lock()
			walks++
			mu.Unlock()
		}
	}
	defer func() { walkModulesHook = nil }()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	f.Cache = c
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	g := &Go{Module: mod, Packages: []string{"."}, CGO: true, CC: "gcc"}
	if _, err := f.Fetch(context.Background(), &Request{Name: "m", Platform: p, NoLicense: true, Kind: g}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if walks != 2 {
		t.Errorf("a local cgo build walked its module %d times, want 2 (its keys')", walks)
	}

	if _, _, err := g.Key(f, nil); err != nil {
		t.Fatal(err)
	}
	if f.keyedReads(mod, g.Packages, g.cgoEnv()) == nil {
		t.Fatal("no reads handed on from the key")
	}
	writeTestFile(t, filepath.Join(dir, "inc", "v.h"), "#define V 22\n")
	if f.keyedReads(mod, g.Packages, g.cgoEnv()) != nil {
		t.Error("../inc/v.h edited since the key: its reads handed on all the same")
	}
	if f.keyedReads(mod, []string{"./..."}, g.cgoEnv()) != nil {
		t.Error("the reads of a build of other packages handed on")
	}
}

// A header the recipe's CGO_CPPFLAGS forces into every compile
// (-include), in the main package's own directory, is in what go build's
// cache is told: go build hashes it as a file of that package, but not
// for runtime/cgo, whose compile reads it too, and which it gave again
// compiled from the old header.
func TestCgoHeadersDigestEnvForcedInPackage(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// int x;\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(mod, "forced.h"), "#define F 1\n")
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	g := &Go{Module: mod, Packages: []string{"."}, CGO: true, Env: []string{"CGO_CPPFLAGS=-include " + filepath.Join(mod, "forced.h")}}
	digest := func() string {
		t.Helper()
		reads, err := f.cgoHeadersRead(mod, g.Packages, g.cgoEnv())
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.cgoHeadersDigest(reads, g, p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := digest()
	writeTestFile(t, filepath.Join(mod, "forced.h"), "#define F 22\n")
	if before == "" || digest() == before {
		t.Errorf("forced.h edited: the digest %q is as it was", before)
	}
}

// A header made between a local cgo build's key and its build that
// shadows one the key found (in a directory searched before the one it
// was found in, or one made below it) has the key's reads not handed
// on, and the module walked again: they were taken, the digest go
// build's cache was told named the old header, and the object compiled
// from the new one was stored under it, to be given to a build of the
// old.
func TestCgoKeyedReadsShadowedHeader(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n\ngo 1.22\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #cgo CFLAGS: -I${SRCDIR}/../first -I${SRCDIR}/../second\n// #include <v.h>\n// #include <sub/w.h>\n// #include \"q.h\"\nimport \"C\"\n\nfunc main() {}\n")
	writeTestFile(t, filepath.Join(dir, "first", "other.h"), "\n")
	writeTestFile(t, filepath.Join(dir, "second", "v.h"), "#define V 1\n")
	writeTestFile(t, filepath.Join(dir, "second", "sub", "w.h"), "#define W 1\n")
	writeTestFile(t, filepath.Join(dir, "second", "q.h"), "#define Q 1\n")
	g := &Go{Module: mod, Packages: []string{"."}, CGO: true}
	for _, shadow := range []string{
		filepath.Join("first", "v.h"),
		filepath.Join("first", "sub", "w.h"),
		filepath.Join("mod", "q.h"),
	} {
		f := New()
		if _, _, err := g.Key(f, nil); err != nil {
			t.Fatal(err)
		}
		if f.keyedReads(mod, g.Packages, g.cgoEnv()) == nil {
			t.Fatal("no reads handed on from the key")
		}
		writeTestFile(t, filepath.Join(dir, shadow), "#define SHADOW 1\n")
		if f.keyedReads(mod, g.Packages, g.cgoEnv()) != nil {
			t.Errorf("%s made since the key, shadowing the header it found: its reads handed on all the same", shadow)
		}
	}
}
