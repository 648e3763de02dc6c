package artifact

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/platform"
)

// newProcess forgets what this process learnt of the go on PATH, as a
// new pallet process starts without it, now and when t ends.
func newProcess(t *testing.T) {
	t.Helper()
	forget := func() {
		hostGoOnce = sync.Once{}
		hostGo, hostGoOwn, hostGoErr = "", false, nil
		toolchainAnswers.Clear()
	}
	forget()
	t.Cleanup(forget)
}

// shimmedGo puts on PATH a version manager's shim (as asdf's or goenv's):
// a script that runs the real go, or, where a .go-version above the
// directory it runs in says "other", a second toolchain whose go is the
// real one saying it is go1.99.1 at a GOROOT of its own.
func shimmedGo(t *testing.T) (otherRoot string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the shim is a shell script")
	}
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	otherRoot = filepath.Join(t.TempDir(), "go1.99.1")
	other := "#!/bin/sh\nif [ \"$1\" = env ]; then\n  shift\n  for n; do case $n in\n" +
		"  GOVERSION) echo go1.99.1;;\n  GOROOT) echo " + otherRoot + ";;\n" +
		"  *) GOTOOLCHAIN=local " + real + " env $n || exit;;\n  esac; done\n  exit 0\nfi\n" +
		"GOTOOLCHAIN=local exec " + real + " \"$@\"\n"
	shim := "#!/bin/sh\nd=$(pwd -P)\nwhile :; do\n  if [ -f \"$d/.go-version\" ]; then v=$(cat \"$d/.go-version\"); break; fi\n" +
		"  [ \"$d\" = / ] && break\n  d=$(dirname \"$d\")\ndone\n" +
		"[ \"$v\" = other ] && exec " + filepath.Join(otherRoot, "bin", "go") + " \"$@\"\nexec " + real + " \"$@\"\n"
	shims := t.TempDir()
	for p, text := range map[string]string{filepath.Join(otherRoot, "bin", "go"): other, filepath.Join(shims, "go"): shim} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	return otherRoot
}

// An unpinned go build whose go on PATH is a version manager's shim is
// keyed by the toolchain the shim runs in the module's directory: when
// the user switches Go (.go-version), the key changes and the build is
// not served from the cache, where the shim's unchanged stamp kept the
// key and the binary built by the old Go was served.
func TestToolchainIdentityOfShim(t *testing.T) {
	newProcess(t)
	otherRoot := shimmedGo(t)
	top := t.TempDir()
	mod := filepath.Join(top, "m")
	for name, text := range map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.MkdirAll(mod, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	f.Cache, f.Log = c, t.Logf
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Name: "m", Platform: p, NoLicense: true, Kind: &Go{Module: mod, Packages: []string{"."}}}
	use := func(v string) {
		t.Helper()
		newProcess(t)
		if err := os.WriteFile(filepath.Join(top, ".go-version"), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := func() string {
		t.Helper()
		k, _, err := f.key(r)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	fetch := func() *Result {
		t.Helper()
		res, err := f.Fetch(context.Background(), r, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	use("real")
	realKey := key()
	if res := fetch(); res.Cached || strings.Contains(res.Record.GoVersion, "go1.99.1") {
		t.Fatalf("first build: cached %v, by %s", res.Cached, res.Record.GoVersion)
	}
	use("real")
	if key() != realKey || !fetch().Cached {
		t.Fatal("the same Go again: not taken from the cache")
	}

	use("other")
	if key() == realKey {
		t.Error("the shim switched to another Go, and the key stayed")
	}
	if res := fetch(); res.Cached || res.Record.GoVersion != "go1.99.1" {
		t.Errorf("after the switch: cached %v, built by %s, want a build by go1.99.1", res.Cached, res.Record.GoVersion)
	}
	parts, err := r.Kind.(*Go).settingsKeyIn(f, r, mod)
	if err != nil {
		t.Fatal(err)
	}
	if want := "host-asked:go1.99.1:" + filepath.Join(otherRoot, "bin", "go") + ":"; !strings.HasPrefix(parts[0], want) {
		t.Errorf("the toolchain is named %q, want %s...", parts[0], want)
	}
}

// A go on PATH that is a toolchain's own, or a link to one (Debian's
// /usr/bin/go), is named by its stamp without running it, as before a
// shim was told apart: its keys are what they were.
func TestToolchainIdentityOfOwnGo(t *testing.T) {
	newProcess(t)
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	real, err = filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	if !ownGo(real) {
		t.Fatalf("%s, the go on PATH, is not taken for a toolchain's own", real)
	}
	links := t.TempDir()
	if err := os.Symlink(real, filepath.Join(links, "go")); err != nil {
		t.Skip(err)
	}
	t.Setenv("PATH", links+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOTOOLCHAIN", "local")
	info, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	got, err := toolchainIdentity("", func() (string, string, error) {
		t.Error("a toolchain's own go was run to name it")
		return "", "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "host:" + real + ":" + strconv.FormatInt(info.Size(), 10) + ":" + strconv.FormatInt(info.ModTime().UnixNano(), 10) + ":local"; got != want {
		t.Errorf("named %q, want %q", got, want)
	}
}

// Offline, the toolchain a build switches to is proven unless the go on
// PATH is that release already. A shim is asked that in the build's
// directory, where the release it runs may not be the one it runs where
// pallet does: there it said go1.99.1, the release pinned, and the build
// then switched from another Go to a go1.99.1 taken unchecked from the
// file proxy.
func TestVerifyGoToolchainAsksShimInDir(t *testing.T) {
	newProcess(t)
	shimmedGo(t)
	here := t.TempDir()
	if err := os.WriteFile(filepath.Join(here, ".go-version"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(here)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".go-version"), []byte("real\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(t.TempDir()), "GOSUMDB=off", "GOTOOLCHAIN=go1.99.1",
		"GOMODCACHE="+t.TempDir(), "GOFLAGS=-modcacherw")
	got, err := VerifyGoToolchain(context.Background(), dir, env)
	if err == nil || !strings.Contains(err.Error(), "toolchain golang.org/toolchain@v0.0.1-go1.99.1") || !strings.Contains(err.Error(), "no record of it") {
		t.Errorf("a switch to go1.99.1 from the Go the shim runs in %s: %v, %q; want it checked, and refused with no record of it", dir, err, EnvValue(got, "GOTOOLCHAIN"))
	}
}
