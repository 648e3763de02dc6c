package build

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// A build being stopped kills the go command that finds the toolchain's
// licence: that is the stop, returned as such, and no warning that the
// licence is not shipped (which a failing build printed for every
// cached Go artifact still in flight).
func TestGoLicenceNotWarnedWhenStopped(t *testing.T) {
	var out bytes.Buffer
	rep, err := progress.New("plain", &out)
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{opt: Options{Progress: rep}, work: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pa := &plan.Artifact{Request: artifact.Request{Name: "agent", Kind: &artifact.Go{}}}
	a := &record.Artifact{GoBinaries: []record.GoBinary{{Path: "agent", GoVersion: "go1.26.8"}}}
	err = b.addGoLicense(ctx, pa, os.Environ(), goToolchain{}, a, tree.New())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("addGoLicense on a stopped build = %v, want context.Canceled", err)
	}
	if strings.Contains(out.String(), "not shipped") {
		t.Errorf("a stopped build warned:\n%s", out.String())
	}
}

// Offline without a mirror, what to do names the module cache the
// modules came from, not a mirror the build was not given.
func TestHowToProceedOffline(t *testing.T) {
	release := &artifact.URL{}
	for _, c := range []struct {
		offline, mirror bool
		kind            artifact.Kind
		want, not       string
	}{
		{true, false, &artifact.Go{}, "go env GOMODCACHE", "puts a Go build's modules in the mirror"},
		{true, false, release, "go env GOMODCACHE", "this mirror"},
		{true, true, &artifact.Go{}, "puts a Go build's modules in the mirror", "GOMODCACHE"},
		{true, true, release, "fetch again into this mirror", "go env GOMODCACHE"},
	} {
		got := howToProceed(c.offline, c.mirror, c.kind)
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) || !strings.Contains(got, "--module-licenses=false") {
			t.Errorf("offline %v, mirror %v, %T: %q", c.offline, c.mirror, c.kind, got)
		}
	}
}

// fakeToolchain makes a stand-in Go release, version, at dir/root: a
// VERSION, Go's LICENSE, and bin/go, a script answering go env GOROOT
// GOVERSION GOMODCACHE as that release would, which logs every call to
// the file it returns; says is the GOROOT it names, when not its own.
func fakeToolchain(t *testing.T, dir, version, says string) (root, log string) {
	t.Helper()
	root = filepath.Join(dir, "root")
	log = filepath.Join(dir, "go.log")
	if says == "" {
		says = root
	}
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\n[ \"$1\" = env ] || exit 2\nshift\nfor n; do case $n in\n" +
		"GOROOT) echo " + says + ";;\nGOVERSION) echo " + version + ";;\nGOMODCACHE) echo " + filepath.Join(dir, "mod") + ";;\n*) exit 2;;\nesac; done\n"
	license := "Copyright 2009 The Go Authors.\n\nRedistribution and use in source and binary forms, with or without\nmodification, are permitted.\n" +
		"Neither the name of Google LLC nor the names of its contributors may be used.\n"
	// src/cmd/go makes root a GOROOT, and its go a toolchain's own
	// (artifact.HostGo), not a shim.
	for name, content := range map[string]string{"bin/go": script, "VERSION": version + "\ntime 2026-01-01T00:00:00Z\n", "LICENSE": license, "src/cmd/go/main.go": "package main\n"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, log
}

// asked counts the calls a fake toolchain logged.
func asked(t *testing.T, log string) int {
	t.Helper()
	data, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// toolchainEnv is the environment of a Go build for each of platforms.
func toolchainEnv(t *testing.T, f *artifact.Fetcher, platforms ...string) [][]string {
	t.Helper()
	var envs [][]string
	for _, s := range platforms {
		p, err := platform.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, f.GoEnv(&artifact.Go{}, p))
	}
	return envs
}

// The toolchain's GOROOT is asked once for every platform of an
// artifact, not once per platform: the answer does not depend on the
// target, and go env took 20-40 ms a time (examples/hello asked twice).
func TestToolchainAskedOnceForAllPlatforms(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in toolchain is a shell script")
	}
	dir := t.TempDir()
	root, log := fakeToolchain(t, dir, "go1.99.1", "")
	t.Setenv("PATH", filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	f := artifact.New()
	b := &builder{work: t.TempDir(), fetcher: f, memo: record.NoMemo}
	envs := toolchainEnv(t, f, "linux/amd64", "linux/arm64", "windows/amd64", "linux/amd64")
	var wg sync.WaitGroup
	for _, env := range envs {
		wg.Go(func() {
			gl, err := b.goLicense(t.Context(), env, "go1.99.1", goToolchain{})
			if err != nil {
				t.Error(err)
			} else if gl.version != "go1.99.1" {
				t.Errorf("licence of %s, want go1.99.1", gl.version)
			}
		})
	}
	wg.Wait()
	if n := asked(t, log); n != 1 {
		t.Errorf("go env asked %d times for %d platforms, want once", n, len(envs))
	}
	// Where the answer can differ (another release asked for), it is
	// asked again.
	if _, err := b.goLicense(t.Context(), envs[0], "go1.99.2", goToolchain{}); err == nil {
		t.Error("go1.99.1 taken for go1.99.2")
	}
	if n := asked(t, log); n != 2 {
		t.Errorf("go env asked %d times for two releases, want twice", n)
	}
}

// The toolchain a build's Go binaries were built by is looked up once for
// each environment in a build, not once per binary: each looked for the
// go command on PATH and its memo again.
func TestToolchainLookedUpOncePerEnv(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in toolchain is a shell script")
	}
	dir := t.TempDir()
	root, log := fakeToolchain(t, dir, "go1.99.1", "")
	t.Setenv("PATH", filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	f := artifact.New()
	var looked atomic.Int32
	memo := func(path string, st tree.Stamp, fact string, derive func(string) (string, error)) (string, error) {
		looked.Add(1)
		return record.NoMemo(path, st, fact, derive)
	}
	b := &builder{work: t.TempDir(), fetcher: f, memo: memo}
	envs := toolchainEnv(t, f, "linux/amd64", "linux/arm64")
	const binaries = 5
	var wg sync.WaitGroup
	for _, env := range envs {
		for range binaries {
			wg.Go(func() {
				if gl, err := b.goLicense(t.Context(), env, "go1.99.1", goToolchain{}); err != nil {
					t.Error(err)
				} else if gl.version != "go1.99.1" {
					t.Errorf("licence of %s, want go1.99.1", gl.version)
				}
			})
		}
	}
	wg.Wait()
	if n := looked.Load(); n != int32(len(envs)) {
		t.Errorf("toolchain looked up %d times for %d binaries in %d environments, want %d", n, binaries*len(envs), len(envs), len(envs))
	}
	if n := asked(t, log); n != 1 {
		t.Errorf("go env asked %d times, want once", n)
	}
}

// A rebuild from the cache takes the toolchain's GOROOT from the memo of
// the go command on PATH while that command is the release asked for, at
// its own GOROOT, and unchanged: it runs no go command (it ran go env,
// 25-50 ms of the 100 ms no-op of examples/hello). A go command that
// answers with another GOROOT (a wrapper, a switch to another release)
// is asked at every build.
func TestToolchainKeptByGoCommandStamp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in toolchain is a shell script")
	}
	own, ownLog := fakeToolchain(t, t.TempDir(), "go1.99.1", "")
	other, _ := fakeToolchain(t, t.TempDir(), "go1.99.1", "")
	wrapper, wrapperLog := fakeToolchain(t, t.TempDir(), "go1.99.1", other)
	// The memo keeps facts only of files left alone long enough (2 s)
	// that a change could not keep their stamp.
	time.Sleep(2100 * time.Millisecond)
	cacheDir := t.TempDir()
	build := func() {
		t.Helper()
		withCachedBuilder(t, cacheDir, func(b *builder, env []string) {
			if gl, err := b.goLicense(t.Context(), env, "go1.99.1", goToolchain{}); err != nil {
				t.Fatal(err)
			} else if gl.version != "go1.99.1" {
				t.Fatalf("licence of %s, want go1.99.1", gl.version)
			}
		})
	}
	path := os.Getenv("PATH")
	for _, c := range []struct {
		name string
		root string
		log  string
		want []int // calls logged after each build
	}{
		{"its own GOROOT", own, ownLog, []int{1, 1, 1}},
		{"another GOROOT", wrapper, wrapperLog, []int{1, 2, 3}},
	} {
		t.Setenv("PATH", filepath.Join(c.root, "bin")+string(os.PathListSeparator)+path)
		for i, want := range c.want {
			build()
			if n := asked(t, c.log); n != want {
				t.Errorf("%s: after build %d, go env asked %d times, want %d", c.name, i+1, n, want)
			}
		}
	}
	// A go command changed since is asked again.
	gobin := filepath.Join(own, "bin", "go")
	script, err := os.ReadFile(gobin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gobin, append(script, "# changed\n"...), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(own, "bin")+string(os.PathListSeparator)+path)
	build()
	if n := asked(t, ownLog); n != 2 {
		t.Errorf("a changed go command: go env asked %d times in all, want 2", n)
	}
}

// A rebuild asks the go command on PATH for its module cache only when
// the command, or a variable its answer is made of, changed since the
// answer was kept: a no-op build of a program linking modules ran go env
// GOMODCACHE (25-50 ms) before its licences could be read.
func TestModuleCacheKeptByGoCommandStamp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in toolchain is a shell script")
	}
	dir := t.TempDir()
	root, log := fakeToolchain(t, dir, "go1.99.1", "")
	t.Setenv("PATH", filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOMODCACHE", "")
	// The memo keeps facts only of files left alone long enough (2 s)
	// that a change could not keep their stamp.
	time.Sleep(2100 * time.Millisecond)
	cacheDir := t.TempDir()
	build := func(want string) {
		t.Helper()
		withCachedBuilder(t, cacheDir, func(b *builder, env []string) {
			if got, err := b.moduleCache(t.Context(), env); err != nil {
				t.Fatal(err)
			} else if got != want {
				t.Errorf("module cache %s, want %s", got, want)
			}
		})
	}
	mod := filepath.Join(dir, "mod")
	for i := range 3 {
		build(mod)
		if n := asked(t, log); n != 1 {
			t.Errorf("after build %d, go env asked %d times, want once", i+1, n)
		}
	}
	// Another GOMODCACHE is another answer: the stand-in says its own
	// whatever it is given, and is asked.
	t.Setenv("GOMODCACHE", filepath.Join(dir, "elsewhere"))
	build(mod)
	if n := asked(t, log); n != 2 {
		t.Errorf("with GOMODCACHE set, go env asked %d times in all, want 2", n)
	}
}

// A version manager's shim on PATH (goenv's: GOENV_VERSION selects the
// Go it runs) keeps its stamp when the user switches Go: nothing it said
// is kept in the memo for a later build, which asks it, where the module
// cache the first Go named was taken for the second's.
func TestShimAnswersNotKept(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in toolchains are shell scripts")
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	a, logA := fakeToolchain(t, dirA, "go1.99.1", "")
	b, logB := fakeToolchain(t, dirB, "go1.99.2", "")
	shims := t.TempDir()
	shim := "#!/bin/sh\ncase $GOENV_VERSION in\nb) exec " + filepath.Join(b, "bin", "go") + " \"$@\";;\n*) exec " + filepath.Join(a, "bin", "go") + " \"$@\";;\nesac\n"
	if err := os.WriteFile(filepath.Join(shims, "go"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	if _, err := goOnPath(); err == nil {
		t.Error("a shim taken for a toolchain's go")
	}
	// The memo keeps facts only of files left alone long enough (2 s)
	// that a change could not keep their stamp: the shim's among them.
	time.Sleep(2100 * time.Millisecond)
	cacheDir := t.TempDir()
	for _, c := range []struct{ version, want, log string }{
		{"a", filepath.Join(dirA, "mod"), logA},
		{"b", filepath.Join(dirB, "mod"), logB},
		{"a", filepath.Join(dirA, "mod"), logA},
	} {
		t.Setenv("GOENV_VERSION", c.version)
		before := asked(t, c.log)
		withCachedBuilder(t, cacheDir, func(b *builder, env []string) {
			got, err := b.keptModuleCache(t.Context(), env)
			if err != nil {
				t.Fatal(err)
			} else if got != c.want {
				t.Errorf("GOENV_VERSION=%s: module cache %s, want %s", c.version, got, c.want)
			}
		})
		if asked(t, c.log) == before {
			t.Errorf("GOENV_VERSION=%s: the Go it selects was not asked", c.version)
		}
	}

	// A link to a toolchain's go (Debian's /usr/bin/go) is the toolchain's.
	if err := os.Remove(filepath.Join(shims, "go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(a, "bin", "go"), filepath.Join(shims, "go")); err != nil {
		t.Fatal(err)
	}
	if got, err := goOnPath(); err != nil || got != filepath.Join(a, "bin", "go") {
		t.Errorf("a link to a toolchain's go: %q, %v", got, err)
	}
}

// withCachedBuilder runs ask with a builder on the cache at cacheDir, as
// one build would, once for each of a linux/amd64 and a linux/arm64 Go
// build's environment, and closes the cache (saving its memo) after.
func withCachedBuilder(t *testing.T, cacheDir string, ask func(b *builder, env []string)) {
	t.Helper()
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	f := artifact.New()
	b := &builder{work: t.TempDir(), fetcher: f, cache: c, memo: c.RememberAt}
	for _, env := range toolchainEnv(t, f, "linux/amd64", "linux/arm64") {
		ask(b, env)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// Offline without a mirror, the module cache go env GOMODCACHE names is
// kept by the go command's stamp and what else its answer is made of: a
// build asks again when a variable of it, the go env file or the
// toolchain's go.env changes, and else runs no go command.
func TestOfflineModuleCacheKeptByWhatItIsMadeOf(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in toolchain is a shell script")
	}
	dir := t.TempDir()
	root, log := fakeToolchain(t, dir, "go1.99.1", "")
	t.Setenv("PATH", filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOMODCACHE", "")
	t.Setenv("GOROOT", "")
	envFile := filepath.Join(dir, "goenv")
	t.Setenv("GOENV", envFile)
	// The memo keeps facts only of files left alone long enough (2 s)
	// that a change could not keep their stamp.
	time.Sleep(2100 * time.Millisecond)
	cacheDir := t.TempDir()
	n := Network{Offline: true}
	build := func() {
		t.Helper()
		c, err := cache.Open(cacheDir)
		if err != nil {
			t.Fatal(err)
		}
		f := artifact.New()
		if err := n.offlineModCache(f, c.RememberAt); err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "mod"); f.ModCache != want {
			t.Errorf("module cache %s, want %s", f.ModCache, want)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want := 0
	for _, change := range []struct {
		what   string
		change func()
	}{
		{"the first build", func() {}},
		{"GOMODCACHE set", func() { t.Setenv("GOMODCACHE", filepath.Join(dir, "elsewhere")) }},
		{"GOPATH set", func() { t.Setenv("GOPATH", filepath.Join(dir, "gopath")) }},
		{"a go env file written", func() { writeFiles(t, dir, map[string]string{"goenv": "GOMODCACHE=/x\n"}) }},
		{"the toolchain's go.env written", func() { writeFiles(t, root, map[string]string{"go.env": "GOPROXY=off\n"}) }},
	} {
		change.change()
		want++
		for range 2 {
			build()
			if got := asked(t, log); got != want {
				t.Errorf("%s: go env asked %d times in all, want %d", change.what, got, want)
			}
		}
	}
}
