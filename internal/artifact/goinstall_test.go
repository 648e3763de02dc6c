package artifact_test

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/platform"
)

// binInfo reads the build info of the binary name in res.
func binInfo(t *testing.T, res *artifact.Result, name string) *buildinfo.BuildInfo {
	t.Helper()
	e, ok := res.Tree.Get(name)
	if !ok {
		t.Fatalf("no %s in the tree: %v", name, res.Tree.Entries())
	}
	info, err := buildinfo.ReadFile(e.Source)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// checkPinned says whether the binary's main module is hello at its pin,
// as go install hello/cmd/hello@v1.0.0 records it, with greet linked in.
func checkPinned(t *testing.T, info *buildinfo.BuildInfo, sum string) {
	t.Helper()
	if m := info.Main; m.Path != helloPath || m.Version != "v1.0.0" || m.Sum != sum {
		t.Errorf("main module %s %s %s, want %s v1.0.0 %s", m.Path, m.Version, m.Sum, helloPath, sum)
	}
	if info.Path != helloPath+"/cmd/hello" {
		t.Errorf("path %q", info.Path)
	}
	if len(info.Deps) != 1 || info.Deps[0].Path != greetPath || info.Deps[0].Version != "v1.0.0" || info.Deps[0].Sum == "" {
		t.Errorf("deps %+v", info.Deps)
	}
}

// A module built by version names its version and pin in its binaries'
// build info, as go install does, for scanners to read; two builds in
// different work directories give the same bytes.
func TestGoModuleBuildInfo(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	f := fetcher(t)
	var bins [][]byte
	for range 2 {
		res, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		checkPinned(t, binInfo(t, res, "hello"), sum)
		if v := binInfo(t, res, "hello").GoVersion; !strings.HasPrefix(v, res.Record.GoVersion) || res.Record.GoVersion == "" {
			t.Errorf("record's toolchain %q, binary's %q", res.Record.GoVersion, v)
		}
		e, _ := res.Tree.Get("hello")
		b, err := os.ReadFile(e.Source)
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, b)
	}
	if !bytes.Equal(bins[0], bins[1]) {
		t.Error("two builds of the same pin in different work directories differ")
	}
}

// Cross-compiled binaries (go install puts them in $GOPATH/bin/$GOOS_$GOARCH)
// name the module version too, with the recipe's ldflags and tags.
func TestGoModuleBuildInfoCross(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	for _, plat := range []string{"windows/amd64", "linux/arm64", "linux/amd64"} {
		if plat == runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		pl, err := platform.Parse(plat)
		if err != nil {
			t.Fatal(err)
		}
		r := helloRequest(t, sum)
		r.Platform = pl
		// go leaves -ldflags out of the build info with -trimpath.
		r.Kind.(*artifact.GoModule).Go.Ldflags = []string{"-s", "-X", "main.unused=1"}
		r.Kind.(*artifact.GoModule).Go.Tags = []string{"netgo"}
		res, err := fetcher(t).Fetch(context.Background(), r, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", plat, err)
		}
		name := "hello"
		if pl.OS == "windows" {
			name = "hello.exe"
		}
		if res.Tree.Len() != 1 {
			t.Errorf("%s: tree %v", plat, res.Tree.Entries())
		}
		info := binInfo(t, res, name)
		checkPinned(t, info, sum)
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if settings["GOOS"] != pl.OS || settings["GOARCH"] != pl.Arch || settings["-tags"] != "netgo" || settings["-trimpath"] != "true" {
			t.Errorf("%s: settings %v", plat, settings)
		}
	}
}

// A module whose go.mod has an exclude (or a replace) directive cannot be
// built by go install: it is built in its unpacked directory as before,
// says (devel), and the log says why.
func TestGoModuleExcludeFallsBack(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "\nexclude "+greetPath+" v0.9.0\n")
	f := fetcher(t)
	var mu sync.Mutex
	var logged []string
	f.Log = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	res, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := runHello(t, res); got != "hello from a module" {
		t.Errorf("hello printed %q", got)
	}
	if v := binInfo(t, res, "hello").Main.Version; v != "(devel)" {
		t.Errorf("main module version %q", v)
	}
	if s := strings.Join(logged, "\n"); !strings.Contains(s, helloPath+"@v1.0.0") || !strings.Contains(s, "(devel)") || !strings.Contains(s, "replace or exclude") {
		t.Errorf("log %q", s)
	}
}

// The tree go install reads is the module cache's, not pallet's copy: a
// file changed there after the go command unpacked it is refused.
func TestGoModuleTamperedTree(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	f := fetcher(t)
	if _, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(os.Getenv("GOMODCACHE"), helloPath+"@v1.0.0", "cmd", "hello", "main.go")
	if err := os.WriteFile(main, []byte("package main\n\nfunc main() { println(\"evil\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "go.sum hash mismatch") || !strings.Contains(err.Error(), "module cache") {
		t.Errorf("a tampered module tree: %v", err)
	}
}

// go install does not read the module's go.sum: a dependency the module's
// go.sum pins with another hash than the one built is refused all the same.
func TestGoModuleDependencyAgainstGoSum(t *testing.T) {
	p := newModProxy(t)
	greetMod := "module " + greetPath + "\n\ngo 1.22\n"
	greet := p.addModule(t, greetPath, "v1.0.0", map[string]string{
		"go.mod":   greetMod,
		"greet.go": "package greet\n\nfunc Hello() string { return \"hi\" }\n",
	})
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	sum := p.addModule(t, helloPath, "v1.0.0", map[string]string{
		"go.mod":            "module " + helloPath + "\n\ngo 1.22\n\nrequire " + greetPath + " v1.0.0\n",
		"go.sum":            fmt.Sprintf("%s v1.0.0 %s\n%s v1.0.0/go.mod %s\n", greetPath, wrong, greetPath, greet.mod),
		"cmd/hello/main.go": "package main\n\nimport \"" + greetPath + "\"\n\nfunc main() { println(greet.Hello()) }\n",
	}).zip
	_, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), greetPath+"@v1.0.0") || !strings.Contains(err.Error(), wrong) {
		t.Errorf("a dependency go.sum does not pin: %v", err)
	}
}

// go install takes the requirements of the module it builds from the
// .mod file the proxy serves (the module cache's cache/download), not from
// the go.mod in the zip the pin proves: a proxy (with GONOSUMDB, or
// offline's GOSUMDB=off) or a module cache whose .mod says otherwise must
// not change what is linked, even to another version the go.sum knows.
func TestGoModuleModFileAgainstPin(t *testing.T) {
	p := newModProxy(t)
	greetMod := "module " + greetPath + "\n\ngo 1.22\n"
	good := p.addModule(t, greetPath, "v1.0.0", map[string]string{
		"go.mod":   greetMod,
		"greet.go": "package greet\n\nfunc Hello() string { return \"hello from a module\" }\n",
	})
	evil := p.addModule(t, greetPath, "v1.1.0", map[string]string{
		"go.mod":   greetMod,
		"greet.go": "package greet\n\nfunc Hello() string { return \"evil\" }\n",
	})
	files := map[string]string{
		"go.mod": "module " + helloPath + "\n\ngo 1.22\n\nrequire " + greetPath + " v1.0.0\n",
		// A go.sum may hold more versions of a module than are selected.
		"go.sum": fmt.Sprintf("%s v1.0.0 %s\n%s v1.0.0/go.mod %s\n%s v1.1.0 %s\n%s v1.1.0/go.mod %s\n",
			greetPath, good.zip, greetPath, good.mod, greetPath, evil.zip, greetPath, evil.mod),
		"cmd/hello/main.go": "package main\n\nimport \"" + greetPath + "\"\n\nfunc main() { println(greet.Hello()) }\n",
	}
	sum := p.addModule(t, helloPath, "v1.0.0", files).zip
	p.setModule(t, helloPath, "v1.0.0", "module "+helloPath+"\n\ngo 1.22\n\nrequire "+greetPath+" v1.1.0\n", zipModule(t, helloPath, "v1.0.0", files))
	res, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil {
		t.Fatalf("built with the proxy's go.mod, not the pinned one: hello prints %q", runHello(t, res))
	}
	if !strings.Contains(err.Error(), "go.mod") || !strings.Contains(err.Error(), helloPath+"@v1.0.0") {
		t.Errorf("error %v", err)
	}
}

// go install applies the godebug directives of no go.mod but the main
// module's, and a module built by version is not the main module: one
// whose go.mod sets them is built in the unpacked module, so that its
// binaries run with the defaults its authors declared.
func TestGoModuleGodebugKept(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "\ngodebug panicnil=1\n")
	res, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var def string
	for _, s := range binInfo(t, res, "hello").Settings {
		if s.Key == "DefaultGODEBUG" {
			def = s.Value
		}
	}
	if !strings.Contains(def, "panicnil=1") {
		t.Errorf("DefaultGODEBUG %q, the module's go.mod says panicnil=1", def)
	}
}

// Unpinned, a gomod build uses the toolchain a build in the module would
// choose: go install by version reads the module's go line alone. With
// GOTOOLCHAIN=go1.25.5+path, go install would switch to the go1.25.5 on
// PATH where the module's toolchain line keeps this Go. That go1.25.5 is
// a stand-in, which logs what it is asked and runs this Go.
func TestGoModuleToolchainLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stand-in toolchain is a shell script")
	}
	p := newModProxy(t)
	sum := p.addHello(t, "\ntoolchain "+runtime.Version()+"\n")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "go1.25.5.log")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nunset GOTOOLCHAIN_INTERNAL_SWITCH_VERSION GOTOOLCHAIN_INTERNAL_SWITCH_COUNT\nGOTOOLCHAIN=local exec " + goBin + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go1.25.5"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOTOOLCHAIN", "go1.25.5+path")
	res, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkPinned(t, binInfo(t, res, "hello"), sum)
	asked, _ := os.ReadFile(log)
	if strings.Contains(string(asked), "install") {
		t.Errorf("go install ran as go1.25.5, not as the module's toolchain line says:\n%s", asked)
	}
}

// A module built in its unpacked tree (its go.mod has directives go
// install refuses) is said to be so once, not once more per platform:
// hcsshim for windows/amd64 and windows/arm64 said it twice, word for word.
func TestGoModuleUnpackedSaidOnce(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "\ngodebug panicnil=1\n")
	f := fetcher(t)
	var said []string
	f.Log = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	for _, pl := range []string{"windows/amd64", "windows/arm64"} {
		r := helloRequest(t, sum)
		var err error
		if r.Platform, err = platform.Parse(pl); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(context.Background(), r, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, line := range said {
		if strings.Contains(line, "built in the unpacked module") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("said %d times that the module is built in its unpacked tree, want once:\n%s", n, strings.Join(said, "\n"))
	}
}
