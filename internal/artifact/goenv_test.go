package artifact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// From the go env file, builds take where modules come from and where
// caches live, never what changes a binary; the environment wins over it.
func TestHostSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(file, []byte("GOPROXY=https://proxy.internal\nGOPRIVATE=corp.example\nGOCACHEPROG=/usr/local/bin/cacheprog\nGOAMD64=v3\nGOFLAGS=-tags=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", file)
	t.Setenv("GOPROXY", "")
	t.Setenv("GOPRIVATE", "")
	t.Setenv("GOCACHEPROG", "")
	got := hostSettings()
	// GOCACHEPROG shares compiled packages with a fleet's cache server;
	// it changes where results are kept, not what is built.
	for _, want := range []string{"GOPROXY=https://proxy.internal", "GOPRIVATE=corp.example", "GOCACHEPROG=/usr/local/bin/cacheprog"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing from %v", want, got)
		}
	}
	for _, kv := range got {
		if kv == "GOAMD64=v3" || kv == "GOFLAGS=-tags=evil" {
			t.Errorf("%s passed from the go env file", kv)
		}
	}
	t.Setenv("GOPROXY", "direct")
	if slices.Contains(hostSettings(), "GOPROXY=https://proxy.internal") {
		t.Error("the go env file won over the environment")
	}
	t.Setenv("GOENV", "off")
	if got := hostSettings(); len(got) != 0 {
		t.Errorf("GOENV=off, yet %v", got)
	}
}

// What cgo's tools read from the environment (pkg-config's search path,
// the compiler's include and library paths) decides what is linked in,
// and is not in the cache key: builds never take it from the user's
// environment, only from the recipe's go.env.
func TestGoEnvDropsCToolchainSettings(t *testing.T) {
	for _, k := range []string{"PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "CPATH", "C_INCLUDE_PATH", "LIBRARY_PATH", "CGO_LDFLAGS", "CC"} {
		t.Setenv(k, "/tmp/leak")
	}
	t.Setenv("PALLET_TEST_KEEP", "1")
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	env := (&Fetcher{}).goEnv(&Go{CGO: true, Env: []string{"PKG_CONFIG_PATH=/recipe/pc"}}, p)
	for _, kv := range env {
		if strings.HasSuffix(kv, "=/tmp/leak") {
			t.Errorf("%s reached the build from the environment", kv)
		}
	}
	if !slices.Contains(env, "PKG_CONFIG_PATH=/recipe/pc") || !slices.Contains(env, "PALLET_TEST_KEEP=1") {
		t.Errorf("the recipe's setting or an unrelated variable is missing: %v", env)
	}
}

// cgo for a platform the host's C compiler cannot target needs a cc from
// the recipe (cc, or CC in env); the host's own platform, and 386 on an
// amd64 host, do not.
func TestNeedsCC(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("cases written for a linux/amd64 host")
	}
	parse := func(s string) platform.Platform {
		p, err := platform.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		g    Go
		p    string
		want string // in the error; "" = none
	}{
		{Go{CGO: true}, "linux/amd64", ""},
		{Go{CGO: true}, "linux/386", ""},
		{Go{CGO: false}, "linux/arm64", ""},
		{Go{CGO: true, CC: "aarch64-linux-gnu-gcc"}, "linux/arm64", ""},
		{Go{CGO: true, Env: []string{"CC=aarch64-linux-gnu-gcc"}}, "linux/arm64", ""},
		{Go{CGO: true}, "linux/arm64", "cc: {linux/arm64: aarch64-linux-gnu-gcc}"},
		{Go{CGO: true}, "windows/amd64", "x86_64-w64-mingw32-gcc"},
		{Go{CGO: true}, "windows/arm64", "cc: {windows/arm64: CC}"},
		// The recipe's env is what the go command runs with (cgoOn).
		{Go{Env: []string{"CGO_ENABLED=1"}}, "linux/arm64", "cc: {linux/arm64: aarch64-linux-gnu-gcc}"},
		{Go{CGO: true, Env: []string{"CGO_ENABLED=0"}}, "linux/arm64", ""},
	} {
		err := needsCC(&tc.g, parse(tc.p))
		var fe *FieldError
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) || fe.Field != "cgo") {
			t.Errorf("%+v on %s: %v, want %q", tc.g, tc.p, err, tc.want)
		}
	}
}

// Whether a build is cgo has one answer, the one the go command acts on:
// the recipe's env, put last, wins over cgo, for the environment, the
// key's record of C libraries and the cross C compiler check alike.
func TestCgoOnOneAnswer(t *testing.T) {
	p, err := platform.Parse("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g    Go
		want bool
	}{
		{Go{}, false},
		{Go{CGO: true}, true},
		{Go{Env: []string{"CGO_ENABLED=1"}}, true},
		{Go{CGO: true, Env: []string{"CGO_ENABLED=0"}}, false},
		{Go{Env: []string{"CGO_ENABLED=0", "CGO_ENABLED=1"}}, true},
	} {
		env := (&Fetcher{}).goEnv(&tc.g, p)
		// What the go command sees: exec.Cmd keeps the last of duplicates.
		cmd := exec.Command("true")
		cmd.Env = env
		ran := EnvValue(cmd.Environ(), "CGO_ENABLED") == "1"
		parts, err := tc.g.settingsKey()
		if err != nil {
			t.Fatal(err)
		}
		keyed := slices.Contains(parts, "clibs-v3")
		checked := needsCC(&tc.g, p) != nil
		if tc.g.cgoOn() != tc.want || ran != tc.want || keyed != tc.want || checked != tc.want {
			t.Errorf("%+v: cgoOn %v, the go command's CGO_ENABLED %v, key's clibs %v, C compiler checked %v; want all %v", tc.g, tc.g.cgoOn(), ran, keyed, checked, tc.want)
		}
	}
}

// The git the go command runs for direct module fetches gets pallet's
// floor and stall through git's own low-speed limit, unless the user set
// one.
func TestGoEnvBoundsDirectGit(t *testing.T) {
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	f := &Fetcher{Limits: Limits{Limits: transfer.Limits{Stall: 42 * time.Second, MinRate: 2048}}}
	env := f.goEnv(&Go{}, p)
	if !slices.Contains(env, "GIT_HTTP_LOW_SPEED_LIMIT=2048") || !slices.Contains(env, "GIT_HTTP_LOW_SPEED_TIME=42") {
		t.Errorf("no low-speed limit for git: %v", env)
	}
	t.Setenv("GIT_HTTP_LOW_SPEED_TIME", "600")
	for _, kv := range f.goEnv(&Go{}, p) {
		if strings.HasPrefix(kv, "GIT_HTTP_LOW_SPEED_LIMIT=") {
			t.Errorf("the user's own setting was joined by %s", kv)
		}
	}
}

// A go env the go command fails says why, from its stderr: "go env
// GOMODCACHE: exit status 1" alone left an offline build with a pinned
// toolchain it could not switch to with nothing to go on.
func TestAskGoEnvSaysWhy(t *testing.T) {
	env := append(os.Environ(), "GOTOOLCHAIN=go1.999.0", "GOPROXY=off", "GOFLAGS=")
	_, err := AskGoEnv(t.Context(), t.TempDir(), env, "GOVERSION")
	if err == nil {
		t.Fatal("go env with an unavailable toolchain succeeded")
	}
	if !strings.Contains(err.Error(), "go1.999.0") {
		t.Errorf("error does not say why the go command failed: %v", err)
	}
}

// A caller of AskToolchainEnv waiting on another's question gets an
// answer of its own when that other is stopped (its build cancelled),
// not the other's cancellation; and the failed question is not kept.
func TestAskToolchainEnvStoppedAskerFailsOnlyItself(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go command is a shell script")
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "go.log")
	slept := filepath.Join(bin, "slept")
	// The first question takes long enough to be stopped; later ones answer at once.
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nif [ ! -e " + slept + " ]; then touch " + slept + "; sleep 5; fi\necho /fake/root\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir, env := t.TempDir(), append(os.Environ(), "GOENV=off")
	started := func() bool { _, err := os.Stat(slept); return err == nil }

	ctx, stop := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		_, err := AskToolchainEnv(ctx, dir, env, "GOROOT")
		firstErr <- err
	}()
	for !started() {
		time.Sleep(5 * time.Millisecond)
	}
	waiter := make(chan error, 1)
	go func() {
		v, err := AskToolchainEnv(t.Context(), dir, env, "GOROOT")
		if err == nil && !slices.Equal(v, []string{"/fake/root"}) {
			err = fmt.Errorf("answered %q", v)
		}
		waiter <- err
	}()
	time.Sleep(50 * time.Millisecond) // the waiter waits on the first's question
	stop()
	if err := <-firstErr; err == nil {
		t.Error("the stopped question was answered")
	}
	if err := <-waiter; err != nil {
		t.Errorf("a live caller waiting on a stopped one: %v", err)
	}
	if v, err := AskToolchainEnv(t.Context(), dir, env, "GOROOT"); err != nil || !slices.Equal(v, []string{"/fake/root"}) {
		t.Errorf("asked after a stopped question: %q, %v", v, err)
	}
}

// AskToolchainEnv's answers are kept for each directory asked in until
// that directory is forgotten, with those below it: a process running
// build after build, each in a work directory of its own, held one more
// answer for each. Until then, the answer is asked once.
func TestForgetToolchainEnv(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go command is a shell script")
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "go.log")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\necho /fake/root\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	env := append(os.Environ(), "GOENV=off")
	ask := func(dir string) {
		t.Helper()
		if v, err := AskToolchainEnv(t.Context(), dir, env, "GOROOT"); err != nil || !slices.Equal(v, []string{"/fake/root"}) {
			t.Fatalf("asked in %s: %q, %v", dir, v, err)
		}
	}
	asked := func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "\n")
	}
	held := ToolchainAnswersHeld()
	other := t.TempDir()
	ask(other)
	for i := range 20 {
		work := t.TempDir()
		sub := filepath.Join(work, "licences-1")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		ask(work)
		ask(sub)
		ask(work)
		if n := asked(); n != 1+2*(i+1) {
			t.Fatalf("build %d: go env asked %d times in all, want %d", i, n, 1+2*(i+1))
		}
		ForgetToolchainEnv(work)
	}
	if n := ToolchainAnswersHeld(); n != held+1 {
		t.Errorf("after 20 builds forgotten, %d answers held, want %d", n, held+1)
	}
	// A directory not forgotten keeps its answer; one whose name only
	// begins with a forgotten one's is another.
	ForgetToolchainEnv(other[:len(other)-1])
	ask(other)
	if n := asked(); n != 41 {
		t.Errorf("go env asked again in a directory not forgotten: %d times in all, want 41", n)
	}
	ForgetToolchainEnv(other)
	if n := ToolchainAnswersHeld(); n != held {
		t.Errorf("%d answers held, want %d", n, held)
	}
}

// goWrapper puts first on PATH a go that logs its arguments, a line a
// run, then runs the real one; it returns the log's lines so far. It
// stands for a toolchain's own go: its bin has src/cmd/go beside it
// (HostGo), so that it is asked as that one is, not as a shim.
func goWrapper(t *testing.T) (runs func() []string) {
	t.Helper()
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(filepath.Join(root, "src", "cmd", "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(bin, "go.log")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		data, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
}

// Offline builds, one after another in a process, each in a work
// directory of its own forgotten after it, keep a bounded number of go
// env answers, and ask the go command for its default GOTOOLCHAIN and the
// toolchain check's GOVERSION GOMODCACHE once in all: the check's answers
// were kept by an environment holding the build's GOTMPDIR, one more each
// build and never forgotten, and go env GOTOOLCHAIN ran before every go
// command of an unpinned build.
func TestOfflineBuildsAskToolchainOnce(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the logging go is a shell script")
	}
	mods := make([]string, 2)
	for i := range mods {
		mods[i] = t.TempDir()
		for name, data := range map[string]string{"go.mod": fmt.Sprintf("module example.com/m%d\n\ngo 1.22\n", i), "main.go": "package main\n\nfunc main() {}\n"} {
			if err := os.WriteFile(filepath.Join(mods[i], name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	// "": the go command's own default ($GOROOT/go.env); auto: checked
	// for a switch the go.mod asks for, with the check's go env.
	for _, gotc := range []string{"", "auto"} {
		t.Run("GOTOOLCHAIN="+gotc, func(t *testing.T) {
			t.Setenv("GOTOOLCHAIN", gotc)
			t.Setenv("GOENV", "off")
			runs := goWrapper(t)
			f := &Fetcher{Offline: true, ModCache: t.TempDir()}
			held := -1
			const builds = 3
			for i := range builds {
				work := t.TempDir()
				for j, mod := range mods {
					g := &Go{Module: mod, Packages: []string{"."}}
					r := &Request{Name: fmt.Sprintf("m%d", j), Platform: p, Kind: g}
					if _, err := g.Produce(t.Context(), f, r, filepath.Join(work, r.Name)); err != nil {
						t.Fatalf("build %d, %s: %v", i+1, r.Name, err)
					}
				}
				ForgetToolchainEnv(work)
				if held < 0 {
					held = ToolchainAnswersHeld()
				} else if n := ToolchainAnswersHeld(); n != held {
					t.Errorf("after build %d, %d go env answers held, %d after the first", i+1, n, held)
				}
			}
			count := map[string]int{}
			for _, l := range runs() {
				count[l]++
			}
			builtAll := 0
			for l, n := range count {
				if strings.HasPrefix(l, "build ") {
					builtAll += n
				}
			}
			if builtAll != builds*len(mods) {
				t.Errorf("go build ran %d times, want %d", builtAll, builds*len(mods))
			}
			for _, q := range []string{"env GOTOOLCHAIN", "env GOVERSION GOMODCACHE"} {
				if count[q] > 1 {
					t.Errorf("go %s ran %d times for %d go builds, want once at most", q, count[q], builtAll)
				}
			}
		})
	}
}

// The go command's own default GOTOOLCHAIN, kept once per process, is
// asked again when a file it is read from changes between builds: the
// go env file (go env -w GOTOOLCHAIN=..., read where GOENV is not off)
// or $GOROOT/go.env, beside the go command's bin. Kept by the go command
// and the environment alone, the first answer was used for every later
// build, whose toolchain the user had since set otherwise; before it was
// kept, each build asked afresh.
func TestToolchainDefaultAskedAgainWhenItsFileChanges(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go command is a shell script")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(root, "go.log")
	userFile := filepath.Join(t.TempDir(), "env")
	// As the go command reads them: $GOROOT/go.env, then the go env
	// file over it unless GOENV=off.
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\n" +
		"v=$(sed -n 's/^GOTOOLCHAIN=//p' " + filepath.Join(root, "go.env") + ")\n" +
		"if [ \"$GOENV\" != off ] && [ -f \"$GOENV\" ]; then w=$(sed -n 's/^GOTOOLCHAIN=//p' \"$GOENV\"); [ -n \"$w\" ] && v=$w; fi\n" +
		"echo \"$v\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	asked := func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "\n")
	}
	for _, tc := range []struct {
		name, goenv string
		file        string // the file changed between the builds
		before      string
		after       string
	}{
		{"go.env", "off", filepath.Join(root, "go.env"), "GOTOOLCHAIN=auto\n", "GOTOOLCHAIN=local\n"},
		{"go env -w", userFile, userFile, "GOTOOLCHAIN=go1.22.1\n", "GOTOOLCHAIN=go1.23.10+auto\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(filepath.Join(root, "go.env"), "GOTOOLCHAIN=auto\n")
			os.Remove(userFile)
			write(tc.file, tc.before)
			env := append(os.Environ(), "GOENV="+tc.goenv, "GOPROXY=file:///proxy", "GOSUMDB=off", "PALLET_TEST_CASE="+tc.name)
			want := func(w string) {
				t.Helper()
				for range 2 {
					v, err := askOnce(t.Context(), "", env, []string{"GOTOOLCHAIN"}, goEnvIn)
					if err != nil || !slices.Equal(v, []string{w}) {
						t.Fatalf("go env GOTOOLCHAIN: %q, %v; want %s", v, err, w)
					}
				}
			}
			want(strings.TrimSuffix(strings.TrimPrefix(tc.before, "GOTOOLCHAIN="), "\n"))
			n := asked()
			write(tc.file, tc.after)
			want(strings.TrimSuffix(strings.TrimPrefix(tc.after, "GOTOOLCHAIN="), "\n"))
			if got := asked() - n; got != 1 {
				t.Errorf("go env asked %d times after the change, want once", got)
			}
		})
	}
}

// Where the go command switches to another release, the GOROOT it says is
// in the module cache it unpacked that release into: $GOPATH/pkg/mod when
// GOMODCACHE is not set. Asked in one directory with two GOPATHs, each
// gets its own, where GOPATH was left out of the question for any names
// but GOMODCACHE and the second was given the first's GOROOT.
func TestToolchainRootKeptByGOPATHWithoutGOMODCACHE(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go command is a shell script")
	}
	bin := t.TempDir()
	// As a go command switching to go1.99.0 says GOROOT.
	script := "#!/bin/sh\necho \"${GOMODCACHE:-$GOPATH/pkg/mod}/golang.org/toolchain@v0.0.1-go1.99.0.linux-amd64\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	defer ForgetToolchainEnv(dir)
	base := append(os.Environ(), "GOENV=off", "GOTOOLCHAIN=go1.99.0", "GOMODCACHE=")
	for _, gopath := range []string{"/home/a/go", "/home/b/go"} {
		v, err := AskToolchainEnv(t.Context(), dir, append(slices.Clip(base), "GOPATH="+gopath), "GOROOT")
		if want := gopath + "/pkg/mod/golang.org/toolchain@v0.0.1-go1.99.0.linux-amd64"; err != nil || !slices.Equal(v, []string{want}) {
			t.Errorf("GOPATH=%s: GOROOT %q, %v; want %s", gopath, v, err, want)
		}
	}
}
