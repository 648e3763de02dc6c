package artifact_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/platform"
)

// needCgoSeccomp skips a test needing gcc, pkg-config and libseccomp-dev
// on a machine without them, and fails it in CI, where .ci/run installs
// them.
func needCgoSeccomp(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"gcc", "pkg-config"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run must install it", tool)
			}
			t.Skipf("%s is not installed; skipping", tool)
		}
	}
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libseccomp.a"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("libseccomp-dev is not installed; .ci/run must install it")
		}
		t.Skip("libseccomp-dev is not installed; skipping")
	}
}

// seccompModule is a module whose main calls libseccomp through cgo:
// body is main's.
func seccompModule(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/seccomp\n\ngo 1.22\n",
		"main.go": "package main\n\n// #cgo pkg-config: libseccomp\n// #include <seccomp.h>\nimport \"C\"\n\nfunc main() { " + body + " }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// cachedFetcher is a fetcher with a cache of its own.
func cachedFetcher(t *testing.T) *artifact.Fetcher {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fetcher(t)
	f.Cache = c
	return f
}

// keepLog keeps what f logs from now on, for the function it returns.
func keepLog(f *artifact.Fetcher) func() []string {
	var mu sync.Mutex
	var logged []string
	f.Log = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(logged)
	}
}

// dpkgWith is a dpkg whose status file is status, as a fixture.
func dpkgWith(t *testing.T, status string) clibs.Dpkg {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "var/lib/dpkg/info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	return clibs.Dpkg{Root: root}
}

// A static cgo build's result keeps the C libraries it links and their
// packages' copyright files, and a build from the cache has the same; an
// entry whose packages dpkg no longer has at those versions is rebuilt.
func TestCgoLibrariesCachedAndRechecked(t *testing.T) {
	needCgoSeccomp(t)
	dir := seccompModule(t, "println(C.seccomp_version().major)")
	f := cachedFetcher(t)
	logged := keepLog(f)
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	r := &artifact.Request{Name: "seccomp", Platform: p, NoLicense: true,
		Kind: &artifact.Go{Module: dir, Packages: []string{"."}, Ldflags: []string{"-extldflags", "-static"}, CGO: true, CC: "gcc"}}
	seccomp := func(res *artifact.Result) clibs.Library {
		t.Helper()
		if len(res.Record.CLinked) != 1 || !res.Record.CLinked[0].Static {
			t.Fatalf("linked: %+v", res.Record.CLinked)
		}
		libs := res.Record.CLinked[0].Libraries
		i := slices.IndexFunc(libs, func(l clibs.Library) bool { return l.Package.Name == "libseccomp-dev" })
		if i < 0 {
			t.Fatalf("no libseccomp-dev among %+v", libs)
		}
		if _, ok := res.CLicenses.Get(libs[i].Copyright); !ok {
			t.Fatalf("%s is not in the result's C licences", libs[i].Copyright)
		}
		return libs[i]
	}
	first, err := f.Fetch(context.Background(), r, t.TempDir())
	if err != nil || first.Cached {
		t.Fatalf("first: %v", err)
	}
	lib := seccomp(first)
	again, err := f.Fetch(context.Background(), r, t.TempDir())
	if err != nil || !again.Cached {
		t.Fatalf("second: cached %v, %v", again != nil && again.Cached, err)
	}
	if got := seccomp(again); got.Copyright != lib.Copyright || got.Version != lib.Version {
		t.Errorf("from the cache: %+v, built: %+v", got, lib)
	}

	// The package has since changed (dpkg, as a fixture, says another
	// version): the entry is not taken.
	f.Dpkg = dpkgWith(t, fmt.Sprintf("Package: libseccomp-dev\nStatus: install ok installed\nArchitecture: %s\nMulti-Arch: same\nVersion: %s.1\n", lib.Arch, lib.Version))
	rebuilt, err := f.Fetch(context.Background(), r, t.TempDir())
	if err != nil || rebuilt.Cached {
		t.Fatalf("after the package changed: cached %v, %v", rebuilt != nil && rebuilt.Cached, err)
	}
	want := "libseccomp-dev:" + lib.Arch + " " + lib.Version + ", now " + lib.Version + ".1"
	if !slices.ContainsFunc(logged(), func(l string) bool { return strings.Contains(l, want) }) {
		t.Errorf("the log does not say %q: %q", want, logged())
	}
}

// cgo: false with env: [CGO_ENABLED=1] is a cgo build, as the go command
// runs it: its result records the C libraries it links, as one with
// cgo: true does, rather than shipping libseccomp with no licence.
func TestCgoByEnvRecordsLibraries(t *testing.T) {
	needCgoSeccomp(t)
	dir := seccompModule(t, "println(C.seccomp_version().major)")
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	r := &artifact.Request{Name: "seccomp", Platform: p, NoLicense: true,
		Kind: &artifact.Go{Module: dir, Packages: []string{"."}, Ldflags: []string{"-extldflags", "-static"}, Env: []string{"CGO_ENABLED=1"}, CC: "gcc"}}
	res, err := fetcher(t).Fetch(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Record.CLinked) != 1 || !slices.ContainsFunc(res.Record.CLinked[0].Libraries, func(l clibs.Library) bool { return l.Package.Name == "libseccomp-dev" }) {
		t.Fatalf("linked: %+v", res.Record.CLinked)
	}
}

// A dynamic cgo build contains no libseccomp, but was compiled against
// libseccomp-dev's headers and linked against its libseccomp.so: its
// result keeps that package, and an entry made with another version of
// it is rebuilt, as a static build's is.
func TestCgoDynamicLinkedAgainstRechecked(t *testing.T) {
	needCgoSeccomp(t)
	dir := seccompModule(t, "println(C.SCMP_VER_MAJOR, C.seccomp_version().major)")
	f := cachedFetcher(t)
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	r := &artifact.Request{Name: "seccomp", Platform: p, NoLicense: true,
		Kind: &artifact.Go{Module: dir, Packages: []string{"."}, CGO: true, CC: "gcc"}}
	first, err := f.Fetch(context.Background(), r, t.TempDir())
	if err != nil || first.Cached {
		t.Fatalf("first: %v", err)
	}
	if len(first.Record.CLinked) != 1 || first.Record.CLinked[0].Static {
		t.Fatalf("linked: %+v", first.Record.CLinked)
	}
	bin := first.Record.CLinked[0]
	if slices.ContainsFunc(bin.Libraries, func(l clibs.Library) bool { return l.Package.Name == "libseccomp-dev" }) {
		t.Errorf("libseccomp-dev credited as contained: %+v", bin.Libraries)
	}
	i := slices.IndexFunc(bin.Shared, func(l clibs.Library) bool { return l.Package.Name == "libseccomp-dev" && l.Flag == "-lseccomp" })
	if i < 0 {
		t.Fatalf("libseccomp-dev is not among what it was linked against: %+v", bin.Shared)
	}
	lib := bin.Shared[i]
	if again, err := f.Fetch(context.Background(), r, t.TempDir()); err != nil || !again.Cached {
		t.Fatalf("second: cached %v, %v", again != nil && again.Cached, err)
	}
	// dpkg, as a fixture, has every package the result names at its
	// version (libgcc's archive, glibc's libc.so), but libseccomp-dev at
	// another.
	var status strings.Builder
	for _, l := range slices.Concat(bin.Libraries, bin.Shared) {
		if l.Package.Name == "" || l.Package.Name == lib.Package.Name {
			continue
		}
		fmt.Fprintf(&status, "Package: %s\nStatus: install ok installed\nArchitecture: %s\nMulti-Arch: same\nVersion: %s\n\n", l.Package.Name, l.Arch, l.Version)
	}
	fmt.Fprintf(&status, "Package: libseccomp-dev\nStatus: install ok installed\nArchitecture: %s\nMulti-Arch: same\nVersion: %s.1\n", lib.Arch, lib.Version)
	f.Dpkg = dpkgWith(t, status.String())
	logged := keepLog(f)
	if rebuilt, err := f.Fetch(context.Background(), r, t.TempDir()); err != nil || rebuilt.Cached {
		t.Fatalf("after libseccomp-dev changed: cached %v, %v", rebuilt != nil && rebuilt.Cached, err)
	}
	want := "libseccomp-dev:" + lib.Arch + " " + lib.Version + ", now " + lib.Version + ".1"
	if log := logged(); !slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, want) }) || slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, "not installed") }) {
		t.Errorf("the log does not say %q alone: %q", want, log)
	}
}

// A gomod build (go install module@version) of a cgo command is listed in
// the unpacked module: its static libseccomp is found as a go build's is.
func TestCgoLibrariesOfGoInstall(t *testing.T) {
	needCgoSeccomp(t)
	p := newModProxy(t)
	const path = "example.com/seccomp"
	sum := p.addModule(t, path, "v1.0.0", map[string]string{
		"go.mod":            "module " + path + "\n\ngo 1.22\n",
		"cmd/sec/main.go":   "package main\n\n// #cgo pkg-config: libseccomp\n// #include <seccomp.h>\nimport \"C\"\n\nfunc main() { println(C.seccomp_version().major) }\n",
		"LICENSE":           "MIT, for the test\n",
		"cmd/sec/README.md": "x\n",
	}).zip
	r := &artifact.Request{Name: "sec", Platform: hostPlatform(t), Kind: &artifact.GoModule{
		Path: path, Version: "v1.0.0", Sum: sum,
		Go: artifact.Go{Module: ".", Packages: []string{"./cmd/sec"}, Ldflags: []string{"-extldflags", "-static"}, CGO: true, CC: "gcc"},
	}}
	res, err := fetcher(t).Fetch(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Record.CLinked) != 1 || res.Record.CLinked[0].Path != "sec" || !slices.ContainsFunc(res.Record.CLinked[0].Libraries, func(l clibs.Library) bool {
		return l.Package.Name == "libseccomp-dev" && l.Copyright == "debian/libseccomp-dev/copyright"
	}) {
		t.Errorf("linked: %+v", res.Record.CLinked)
	}
}

// A module's zip keeps its vendor/modules.txt but none of the vendored
// packages: go install module@version does not vendor, and neither may
// the listing of its packages, which go would otherwise do in a module
// of go 1.14 or later with a vendor directory (and find nothing there:
// the zips of go-criu v7.2.0 and docker-credential-helpers v0.9.3 are
// such).
func TestCgoLibrariesOfGoInstallVendored(t *testing.T) {
	needCgoSeccomp(t)
	p := newModProxy(t)
	dep := p.addModule(t, "example.com/dep", "v1.0.0", map[string]string{
		"go.mod": "module example.com/dep\n\ngo 1.22\n",
		"dep.go": "package dep\n\nfunc X() int { return 1 }\n",
	})
	const path = "example.com/seccompv"
	sum := p.addModule(t, path, "v1.0.0", map[string]string{
		"go.mod":             "module " + path + "\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n",
		"go.sum":             "example.com/dep v1.0.0 " + dep.zip + "\nexample.com/dep v1.0.0/go.mod " + dep.mod + "\n",
		"vendor/modules.txt": "# example.com/dep v1.0.0\n## explicit; go 1.22\nexample.com/dep\n",
		"cmd/sec/main.go":    "package main\n\n// #cgo pkg-config: libseccomp\n// #include <seccomp.h>\nimport \"C\"\n\nimport \"example.com/dep\"\n\nfunc main() { println(C.seccomp_version().major, dep.X()) }\n",
		"LICENSE":            "MIT, for the test\n",
	}).zip
	r := &artifact.Request{Name: "sec", Platform: hostPlatform(t), Kind: &artifact.GoModule{
		Path: path, Version: "v1.0.0", Sum: sum,
		Go: artifact.Go{Module: ".", Packages: []string{"./cmd/sec"}, Ldflags: []string{"-extldflags", "-static"}, CGO: true, CC: "gcc"},
	}}
	res, err := fetcher(t).Fetch(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Record.CLinked) != 1 || !slices.ContainsFunc(res.Record.CLinked[0].Libraries, func(l clibs.Library) bool {
		return l.Package.Name == "libseccomp-dev"
	}) {
		t.Errorf("linked: %+v", res.Record.CLinked)
	}
}

// A build of ./... credits each binary with what its own packages link:
// the cgo command libseccomp, the other, built without a cgo package
// (net's resolver aside), nothing of it.
func TestCgoLibrariesOfEveryPackage(t *testing.T) {
	needCgoSeccomp(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":              "module example.com/tools\n\ngo 1.22\n",
		"cmd/sec/main.go":     "package main\n\n// #cgo pkg-config: libseccomp\n// #include <seccomp.h>\nimport \"C\"\n\nfunc main() { println(C.seccomp_version().major) }\n",
		"cmd/plain/main.go":   "package main\n\nfunc main() { println(1) }\n",
		"internal/lib/lib.go": "package lib\n\nfunc X() int { return 1 }\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &artifact.Request{Name: "tools", Platform: hostPlatform(t), NoLicense: true,
		Kind: &artifact.Go{Module: dir, Packages: []string{"./..."}, Ldflags: []string{"-extldflags", "-static"}, CGO: true, CC: "gcc"}}
	res, err := fetcher(t).Fetch(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, b := range res.Record.CLinked {
		paths = append(paths, b.Path)
		if b.Path == "sec" && !slices.ContainsFunc(b.Libraries, func(l clibs.Library) bool { return l.Package.Name == "libseccomp-dev" }) {
			t.Errorf("sec: %+v", b.Libraries)
		}
	}
	if !slices.Equal(paths, []string{"sec"}) {
		t.Errorf("binaries credited with C libraries: %q, want sec alone", paths)
	}
}
