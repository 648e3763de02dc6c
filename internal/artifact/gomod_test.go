package artifact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/platform"
)

// modProxy serves modules over the GOPROXY protocol on loopback, as the
// public proxy would, and counts the zips it hands out.
type modProxy struct {
	*httptest.Server
	// mu orders the test's writes before the handler's reads: they are
	// ordered already, through the go command, but the race detector
	// cannot see through another process.
	mu    sync.Mutex
	files map[string][]byte // escaped path/@v/... -> content
	zips  atomic.Int32
	// stall, when set, makes the proxy send the first bytes of a path it
	// says yes to, and then nothing.
	stall func(path string) bool
}

// goSum is what a go.sum line pins for a module: its zip and its go.mod.
type goSum struct{ zip, mod string }

// zipModule makes the zip of module path@version holding files.
func zipModule(t *testing.T, path, version string, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, module.Version{Path: path, Version: version}, dir); err != nil {
		t.Fatal(err)
	}
	return zip.Bytes()
}

// addModule zips the module path@version made of files and serves it; it
// returns the module's go.sum hashes.
func (p *modProxy) addModule(t *testing.T, path, version string, files map[string]string) goSum {
	t.Helper()
	zip := zipModule(t, path, version, files)
	zipFile := filepath.Join(t.TempDir(), "m.zip")
	if err := os.WriteFile(zipFile, zip, 0o644); err != nil {
		t.Fatal(err)
	}
	zipSum, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(files["go.mod"])), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p.setModule(t, path, version, files["go.mod"], zip)
	return goSum{zip: zipSum, mod: modSum}
}

func (p *modProxy) setModule(t *testing.T, path, version, gomod string, zip []byte) {
	t.Helper()
	ep, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": "2024-01-02T03:04:05Z"})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files[ep+"/@v/list"] = []byte(version + "\n")
	p.files[ep+"/@v/"+ev+".info"] = info
	p.files[ep+"/@v/"+ev+".mod"] = []byte(gomod)
	p.files[ep+"/@v/"+ev+".zip"] = zip
}

// newModProxy starts a proxy and points the go command at it, with a
// module cache of the test's own: nothing reaches the public proxy, and
// nothing is taken from an earlier run.
func newModProxy(t *testing.T) *modProxy {
	p := &modProxy{files: map[string][]byte{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		body, ok := p.files[strings.TrimPrefix(r.URL.Path, "/")]
		stall := p.stall
		p.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if stall != nil && stall(r.URL.Path) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		if strings.HasSuffix(r.URL.Path, ".zip") {
			p.zips.Add(1)
		}
		w.Write(body)
	}))
	t.Cleanup(p.Close)
	t.Setenv("GOPROXY", p.URL)
	t.Setenv("GONOSUMDB", "example.com")
	t.Setenv("GOMODCACHE", t.TempDir())
	// Writable, so that the test's module cache can be deleted.
	t.Setenv("GOFLAGS", "-modcacherw")
	return p
}

const (
	helloPath = "example.com/tools/hello"
	greetPath = "example.com/lib/greet"
)

// addHello serves hello v1.0.0, a command that uses greet v1.0.0 from the
// same proxy, and returns hello's go.sum hash.
func (p *modProxy) addHello(t *testing.T, extraGoMod string) string {
	t.Helper()
	greetMod := "module " + greetPath + "\n\ngo 1.22\n"
	greet := p.addModule(t, greetPath, "v1.0.0", map[string]string{
		"go.mod":   greetMod,
		"greet.go": "package greet\n\nfunc Hello() string { return \"hello from a module\" }\n",
	})
	return p.addModule(t, helloPath, "v1.0.0", map[string]string{
		"go.mod":            "module " + helloPath + "\n\ngo 1.22\n\nrequire " + greetPath + " v1.0.0\n" + extraGoMod,
		"go.sum":            fmt.Sprintf("%s v1.0.0 %s\n%s v1.0.0/go.mod %s\n", greetPath, greet.zip, greetPath, greet.mod),
		"LICENSE":           "MIT, for the test\n",
		"cmd/hello/main.go": "package main\n\nimport \"" + greetPath + "\"\n\nfunc main() { println(greet.Hello()) }\n",
		// What a module zip made before Go 1.24 may carry: it must not
		// switch the build to vendor mode.
		"vendor/modules.txt": "# " + greetPath + " v1.0.0\n## explicit\n" + greetPath + "\n",
	}).zip
}

func hostPlatform(t *testing.T) platform.Platform {
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Skipf("host platform: %v", err)
	}
	return p
}

func helloRequest(t *testing.T, sum string) *artifact.Request {
	return &artifact.Request{Name: "hello", Platform: hostPlatform(t), Kind: &artifact.GoModule{
		Path: helloPath, Version: "v1.0.0", Sum: sum,
		Go: artifact.Go{Module: ".", Packages: []string{"./cmd/hello"}, Trimpath: true},
	}}
}

// runHello runs the built command and returns what it printed.
func runHello(t *testing.T, res *artifact.Result) string {
	t.Helper()
	e, ok := res.Tree.Get("hello")
	if !ok {
		t.Fatalf("no hello in the tree: %v", res.Tree.Entries())
	}
	out, err := exec.Command(e.Source).CombinedOutput()
	if err != nil {
		t.Fatalf("running hello: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// A module fetched by version is proved against its h1: pin, unpacked,
// and built with its dependencies; the record names it.
func TestGoModuleBuild(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	res, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := runHello(t, res); got != "hello from a module" {
		t.Errorf("hello printed %q", got)
	}
	if _, ok := res.Licenses.Get("LICENSE"); !ok {
		t.Errorf("the module's licence was not found: %v", res.Licenses.Entries())
	}
	rec := res.Record
	if rec.Kind != "gomod" || rec.Module != helloPath+"@v1.0.0" || rec.SHA256 != sum || !strings.HasPrefix(rec.GoVersion, "go1.") {
		t.Errorf("record %+v", rec)
	}
	if n := p.zips.Load(); n != 2 {
		t.Errorf("the proxy served %d zips, want 2 (hello and greet)", n)
	}
}

// A pin the module does not match stops the build before anything of the
// module is used, naming the module and both hashes.
func TestGoModuleWrongSum(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	work := t.TempDir()
	_, err := fetcher(t).Fetch(context.Background(), helloRequest(t, wrong), work)
	if err == nil {
		t.Fatal("a wrong sum was accepted")
	}
	for _, want := range []string{helloPath + "@v1.0.0", wrong, sum, "mismatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "src")); err == nil {
		t.Error("the module was unpacked although its sum is wrong")
	}
}

// pallet checks the pin itself: a zip changed in the module cache after
// the go command verified it (GONOSUMDB, a writable cache) is refused.
func TestGoModuleTamperedCache(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	f := fetcher(t)
	if _, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	zip := zipModule(t, helloPath, "v1.0.0", map[string]string{
		"go.mod":            "module " + helloPath + "\n",
		"cmd/hello/main.go": "package main\n\nfunc main() { println(\"evil\") }\n",
	})
	cached := filepath.Join(os.Getenv("GOMODCACHE"), "cache", "download", helloPath, "@v", "v1.0.0.zip")
	if err := os.WriteFile(cached, zip, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "go.sum hash mismatch") {
		t.Errorf("a tampered module cache: %v", err)
	}
}

// A directory replace in the module's go.mod would build with files the
// pin does not cover.
func TestGoModuleDirectoryReplace(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "\nreplace "+greetPath+" => /usr/src/greet\n")
	_, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "/usr/src/greet") || !strings.Contains(err.Error(), "go.sum pins") {
		t.Errorf("a directory replace: %v", err)
	}
}

// pallet fetch puts the module and its dependencies in the mirror; an
// offline build with an empty module cache and the proxy gone builds from
// it. Without the mirror, offline says what is missing.
func TestGoModuleMirrorThenOffline(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{helloRequest(t, sum)}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	t.Setenv("GOMODCACHE", t.TempDir())

	f := fetcher(t)
	f.Offline = true
	_, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "offline: module "+helloPath+"@v1.0.0 is not in the cache") {
		t.Errorf("offline without a mirror: %v", err)
	}
	f.Mirror = mirror
	res, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := runHello(t, res); got != "hello from a module" {
		t.Errorf("hello printed %q", got)
	}
	// go install, offline, from the mirror: the binary names the pin.
	checkPinned(t, binInfo(t, res, "hello"), sum)
}

// The key follows everything that changes the result; the origin carries
// the pins a cache entry is checked against.
func TestGoModuleKeyAndOrigin(t *testing.T) {
	base := artifact.GoModule{Path: helloPath, Version: "v1.0.0", Sum: "h1:" + strings.Repeat("A", 43) + "=",
		Go: artifact.Go{Module: ".", Packages: []string{"./cmd/hello"}}}
	key := func(m artifact.GoModule) string {
		parts, ok, err := m.Key(nil, nil)
		if err != nil || !ok {
			t.Fatalf("key: %v, cached %v", err, ok)
		}
		return strings.Join(parts, "\x00")
	}
	k0 := key(base)
	for name, change := range map[string]func(*artifact.GoModule){
		"path":      func(m *artifact.GoModule) { m.Path = "example.com/other" },
		"version":   func(m *artifact.GoModule) { m.Version = "v1.0.1" },
		"sum":       func(m *artifact.GoModule) { m.Sum = "h1:" + strings.Repeat("B", 43) + "=" },
		"packages":  func(m *artifact.GoModule) { m.Go.Packages = []string{"./cmd/other"} },
		"ldflags":   func(m *artifact.GoModule) { m.Go.Ldflags = []string{"-s"} },
		"toolchain": func(m *artifact.GoModule) { m.Go.Version = "1.23.4" },
	} {
		m := base
		change(&m)
		if key(m) == k0 {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	if o := base.Origin(); o.Module != helloPath+"@v1.0.0" || o.SHA256 != base.Sum {
		t.Errorf("origin %+v", o)
	}
}

// A module proxy that stops sending in the middle of a zip ends the go
// command's download after the stall timeout, with the proxy and the
// limit named, instead of holding the build for ever; the next build,
// once the proxy answers again, is not hurt by it.
func TestGoProxyStallBounded(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	p.mu.Lock()
	p.stall = func(path string) bool { return strings.HasSuffix(path, ".zip") }
	p.mu.Unlock()
	f := fetcher(t)
	t.Cleanup(func() { f.Close() })
	f.Limits.Stall = time.Second
	start := time.Now()
	_, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "module proxy "+p.URL+"/") || !strings.Contains(err.Error(), "cut off after") || !strings.Contains(err.Error(), "(limits.stall)") {
		t.Fatalf("fetch through a stalling proxy: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s", took)
	}
	p.mu.Lock()
	p.stall = nil
	p.mu.Unlock()
	res, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := runHello(t, res); !strings.Contains(got, "hello from a module") {
		t.Errorf("hello printed %q", got)
	}
}

// A module zip over limits.download is refused by the gate, named.
func TestGoProxySizeBounded(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	f := fetcher(t)
	t.Cleanup(func() { f.Close() })
	f.Limits.MaxBytes = 300
	_, err := f.Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "module proxy "+p.URL+"/") || !strings.Contains(err.Error(), "over the limit of 300 bytes (limits.download)") {
		t.Fatalf("fetch of a zip over the limit: %v", err)
	}
}

// A build that fails names the go command as a shell would take it: an
// argument with a space in it (the -ldflags the recipe's list makes) is
// quoted, so that the command can be pasted to run it again.
func TestGoModuleFailedBuildQuotesCommand(t *testing.T) {
	p := newModProxy(t)
	const path = "example.com/tools/broken"
	sum := p.addModule(t, path, "v1.0.0", map[string]string{
		"go.mod":             "module " + path + "\n\ngo 1.22\n",
		"cmd/broken/main.go": "package main\n\nfunc main() { undefinedName() }\n",
	}).zip
	req := &artifact.Request{Name: "broken", Platform: hostPlatform(t), Kind: &artifact.GoModule{
		Path: path, Version: "v1.0.0", Sum: sum,
		Go: artifact.Go{Module: ".", Packages: []string{"./cmd/broken"}, Ldflags: []string{"-s", "-w"}, Trimpath: true},
	}}
	_, err := fetcher(t).Fetch(context.Background(), req, t.TempDir())
	if err == nil {
		t.Fatal("a module that does not compile was built")
	}
	if want := "go install -buildvcs=false -trimpath '-ldflags=-s -w' " + path + "/cmd/broken@v1.0.0"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the command %q", err, want)
	}
	if !strings.Contains(err.Error(), "undefinedName") {
		t.Errorf("error %q does not say what go said", err)
	}
}

// pallet fetch of a module for several platforms says it once: the
// download is the same, and only the modules go list names for each
// platform differ. A module's files, the same on every platform, too.
func TestGoModuleMirrorSaidOnce(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	files := p.addAntrea(t)
	other, err := platform.Parse("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if hostPlatform(t) == other {
		other, _ = platform.Parse("linux/amd64")
	}
	var reqs []*artifact.Request
	for _, pf := range []platform.Platform{hostPlatform(t), other} {
		build := helloRequest(t, sum)
		build.Platform = pf
		take := moduleFilesRequest(t, &artifact.GoModuleFiles{Module: antreaPath, Version: "v2.4.0", Sum: files, Path: "hack/windows"})
		take.Platform = pf
		reqs = append(reqs, build, take)
	}
	var mu sync.Mutex
	var lines []string
	f := fetcher(t)
	f.Log = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	if err := f.MirrorTo(context.Background(), t.TempDir(), reqs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mirror " + helloPath + "@v1.0.0", "mirror " + antreaPath + "@v2.4.0"} {
		n := 0
		for _, l := range lines {
			if l == want {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q said %d times, want once: %q", want, n, lines)
		}
	}
}
