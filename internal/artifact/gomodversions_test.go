package artifact_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// addCmd serves path@version, a module with a main package at its root
// whose go.mod is gomod ("" for none), and returns its go.sum hash.
func (p *modProxy) addCmd(t *testing.T, path, version, gomod string) string {
	t.Helper()
	files := map[string]string{"main.go": "package main\n\nfunc main() { println(\"hi\") }\n"}
	if gomod != "" {
		files["go.mod"] = gomod
	}
	sum := p.addModule(t, path, version, files).zip
	if gomod == "" {
		ep, _ := module.EscapePath(path)
		ev, _ := module.EscapeVersion(version)
		p.mu.Lock()
		p.files[ep+"/@v/"+ev+".mod"] = []byte("module " + path + "\n")
		p.mu.Unlock()
	}
	return sum
}

// addList lists versions for path, as the proxy's @v/list does.
func (p *modProxy) addList(t *testing.T, path string, versions ...string) {
	ep, _ := module.EscapePath(path)
	p.mu.Lock()
	p.files[ep+"/@v/list"] = []byte(strings.Join(versions, "\n") + "\n")
	p.mu.Unlock()
}

// cmdRequest builds the main package at the root of path@version.
func cmdRequest(t *testing.T, path, version, sum string, g artifact.Go) *artifact.Request {
	g.Module, g.Packages, g.Trimpath = ".", []string{"."}, true
	return &artifact.Request{Name: "cmd", Platform: hostPlatform(t), Kind: &artifact.GoModule{
		Path: path, Version: version, Sum: sum, Go: g,
	}}
}

// buildPinned builds the module req pins and checks that its binary
// names the module version and its pin.
func buildPinned(t *testing.T, req *artifact.Request) {
	t.Helper()
	buildPinnedWith(t, fetcher(t), req)
}

func buildPinnedWith(t *testing.T, f *artifact.Fetcher, req *artifact.Request) {
	t.Helper()
	m := req.Kind.(*artifact.GoModule)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := f.Fetch(ctx, req, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The binary is named for the module path's last element.
	name := m.Path[strings.LastIndex(m.Path, "/")+1:]
	if info := binInfo(t, res, name); info.Main.Path != m.Path || info.Main.Version != m.Version || info.Main.Sum != m.Sum {
		t.Errorf("main module %s %s %s, want %s %s %s", info.Main.Path, info.Main.Version, info.Main.Sum, m.Path, m.Version, m.Sum)
	}
}

// A module path with upper-case letters (!-escaped in the proxy and the
// module cache) builds by version.
func TestGoModuleUpperCasePath(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/Tools/HelloCmd"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.22\n")
	buildPinned(t, cmdRequest(t, path, "v1.0.0", sum, artifact.Go{}))
}

// A +incompatible version without a go.mod, as modules made before Go
// modules are: go install builds it with the go.mod the go command makes
// up (a module line alone), which the proxy serves.
func TestGoModuleIncompatibleNoGoMod(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/inc"
	sum := p.addCmd(t, path, "v2.0.0+incompatible", "")
	buildPinned(t, cmdRequest(t, path, "v2.0.0+incompatible", sum, artifact.Go{}))

	// The go.mod the proxy serves is the one go install reads, which the
	// zip's hash does not cover: one with requirements the go command
	// would not make up is refused.
	other := "example.com/inc3"
	sum = p.addCmd(t, other, "v2.0.0+incompatible", "")
	p.mu.Lock()
	p.files[other+"/@v/v2.0.0+incompatible.mod"] = []byte("module " + other + "\n\nrequire example.com/evil v1.0.0\n")
	p.mu.Unlock()
	_, err := fetcher(t).Fetch(context.Background(), cmdRequest(t, other, "v2.0.0+incompatible", sum, artifact.Go{}), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "is not the one in the pinned zip") {
		t.Errorf("a made-up go.mod with requirements: %v", err)
	}
}

// A +incompatible version whose go.mod has no /v2 in its module line.
func TestGoModuleIncompatibleGoMod(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/inc2"
	sum := p.addCmd(t, path, "v2.0.0+incompatible", "module "+path+"\n")
	buildPinned(t, cmdRequest(t, path, "v2.0.0+incompatible", sum, artifact.Go{}))
}

// Pseudo-versions build by version.
func TestGoModulePseudoVersion(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/pseudo"
	v := "v0.0.0-20240102030405-abcdef123456"
	sum := p.addCmd(t, path, v, "module "+path+"\n\ngo 1.22\n")
	buildPinned(t, cmdRequest(t, path, v, sum, artifact.Go{}))

	// One after a +incompatible release, of a module path with upper-case
	// letters and no go.mod.
	path = "example.com/Old/Tool"
	v = "v2.0.1-0.20240102030405-abcdef123456+incompatible"
	sum = p.addCmd(t, path, v, "")
	buildPinned(t, cmdRequest(t, path, v, sum, artifact.Go{}))
}

// A pinned version that a later one retracts still builds (go install
// warns at most): a recipe builds the same as the day it was written.
func TestGoModuleRetracted(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/retr"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.22\n")
	p.addCmd(t, path, "v1.1.0", "module "+path+"\n\ngo 1.22\n\nretract v1.0.0 // broken\n")
	p.addList(t, path, "v1.0.0", "v1.1.0")
	buildPinned(t, cmdRequest(t, path, "v1.0.0", sum, artifact.Go{}))
}

// A version of a module its latest version deprecates still builds.
func TestGoModuleDeprecated(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/depr"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.22\n")
	p.addCmd(t, path, "v1.1.0", "// Deprecated: use other\nmodule "+path+"\n\ngo 1.22\n")
	p.addList(t, path, "v1.0.0", "v1.1.0")
	buildPinned(t, cmdRequest(t, path, "v1.0.0", sum, artifact.Go{}))
}

// A module whose go line is newer than the pinned toolchain, or than the
// host's with none pinned, is refused at once, naming its go line.
func TestGoModuleNewerGoLine(t *testing.T) {
	host, ok := strings.CutPrefix(runtime.Version(), "go")
	if !ok {
		t.Skipf("toolchain %s is no release", runtime.Version())
	}
	p := newModProxy(t)
	path := "example.com/newer"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.99\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, g := range []artifact.Go{{Version: host}, {}} {
		_, err := fetcher(t).Fetch(ctx, cmdRequest(t, path, "v1.0.0", sum, g), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "requires go >= 1.99") {
			t.Errorf("toolchain %q: want a refusal naming go 1.99, got %v", g.Version, err)
		}
	}
}

// Offline, from the mirror, a version that a later one retracts and
// whose module the later one deprecates still builds: the mirror lists
// the versions it holds alone.
func TestGoModuleRetractedMirrorThenOffline(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/depr"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.22\n")
	p.addCmd(t, path, "v1.1.0", "// Deprecated: use other\nmodule "+path+"\n\ngo 1.22\n\nretract v1.0.0\n")
	p.addList(t, path, "v1.0.0", "v1.1.0")
	buildMirroredOffline(t, p, cmdRequest(t, path, "v1.0.0", sum, artifact.Go{}))
}

// A version without a go.mod is mirrored and built offline.
func TestGoModuleNoGoModMirrorThenOffline(t *testing.T) {
	p := newModProxy(t)
	path := "example.com/inc"
	sum := p.addCmd(t, path, "v2.0.0+incompatible", "")
	buildMirroredOffline(t, p, cmdRequest(t, path, "v2.0.0+incompatible", sum, artifact.Go{}))
}

// buildMirroredOffline mirrors what req needs from p, stops p, and builds
// req offline from the mirror alone, with an empty module cache.
func buildMirroredOffline(t *testing.T, p *modProxy, req *artifact.Request) {
	t.Helper()
	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{req}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	t.Setenv("GOMODCACHE", t.TempDir())
	f := fetcher(t)
	f.Offline = true
	f.Mirror = mirror
	buildPinnedWith(t, f, req)
}

// go install by version asks the proxy for the module's latest version,
// for its deprecation notice, and fails when the proxy cannot say: here
// it lists a v1.1.0 it does not serve. A pinned build needs nothing but
// its version: it builds, and asks the proxy nothing about others.
func TestGoModuleLatestUnreachable(t *testing.T) {
	p := newModProxy(t)
	const path = "example.com/tools/pinned"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.22\n")
	p.addList(t, path, "v1.0.0", "v1.1.0")
	buildPinned(t, cmdRequest(t, path, "v1.0.0", sum, artifact.Go{}))
}

// Offline, a module built by version with a pinned toolchain takes the
// toolchain from the mirror. The go command verifies a toolchain it
// switches to against the checksum database even with GOSUMDB=off
// (offline), unless GOPROXY is a single file:// proxy: a list of two
// failed every such build ("verifying module: checksum database disabled
// by GOSUMDB=off"). The toolchain is taken from the host's module cache,
// where the test of a pinned toolchain offline (cmd/pallet) or any
// earlier build with GOTOOLCHAIN put it; without it, the test skips.
func TestGoModulePinnedToolchainOffline(t *testing.T) {
	const pinned = "1.25.5"
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	name := "v0.0.1-go" + pinned + "." + runtime.GOOS + "-" + runtime.GOARCH
	hostDir := filepath.Join(strings.TrimSpace(string(out)), "cache", "download", "golang.org", "toolchain", "@v")
	if _, err := os.Stat(filepath.Join(hostDir, name+".zip")); err != nil {
		// From the module proxy, as a build pinning it would fetch it
		// (a fresh machine has not).
		dl := exec.Command("go", "mod", "download", "golang.org/toolchain@"+name)
		dl.Dir = t.TempDir()
		dl.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		if out, err := dl.CombinedOutput(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("fetching toolchain go%s: %v\n%s", pinned, err, out)
			}
			t.Skipf("toolchain go%s not in the host's module cache, and not fetched: %v\n%s", pinned, err, out)
		}
	}
	p := newModProxy(t)
	path := "example.com/pinnedgo"
	sum := p.addCmd(t, path, "v1.0.0", "module "+path+"\n\ngo 1.22\n")
	mirror := t.TempDir()
	// The test proxy holds no toolchain: mirror the module, then put the
	// toolchain where pallet fetch puts it.
	if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{cmdRequest(t, path, "v1.0.0", sum, artifact.Go{})}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	dst := filepath.Join(artifact.ModuleCache(mirror), "cache", "download", "golang.org", "toolchain", "@v")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".zip", ".ziphash"} {
		data, err := os.ReadFile(filepath.Join(hostDir, name+ext))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name+ext), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// And the checksum database's record of it, and the tiles that prove
	// it, which the go command cached where it verified it, as in a
	// fetched mirror: offline builds verify the toolchain by them.
	hostDB := filepath.Join(strings.TrimSpace(string(out)), "cache", "download", "sumdb", "sum.golang.org")
	mirrorDB := filepath.Join(artifact.ModuleCache(mirror), "cache", "download", "sumdb", "sum.golang.org")
	lookup := filepath.Join("lookup", "golang.org", "toolchain@"+name)
	data, err := os.ReadFile(filepath.Join(hostDB, lookup))
	if err != nil {
		t.Skipf("the host's module cache holds no checksum database record of toolchain go%s: %v", pinned, err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(mirrorDB, lookup)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mirrorDB, lookup), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(mirrorDB, "tile"), os.DirFS(filepath.Join(hostDB, "tile"))); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOSUMDB", "sum.golang.org")
	f := fetcher(t)
	f.Offline = true
	f.Mirror = mirror
	req := cmdRequest(t, path, "v1.0.0", sum, artifact.Go{Version: pinned})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := f.Fetch(ctx, req, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := binInfo(t, res, "pinnedgo").GoVersion; got != "go"+pinned {
		t.Errorf("built offline with %s, want go%s", got, pinned)
	}
}
