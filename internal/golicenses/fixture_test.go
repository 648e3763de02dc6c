package golicenses

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/licenseclassifier/v2/assets"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// The fixture: a main module requiring modules served by a loopback
// module proxy, built once with the host's go command into a binary whose
// build info names them, as any go build would.

// corpus reads a licence text from the classifier's embedded corpus; the
// tests decorate each with the title and copyright lines real files have.
func corpus(name string) string {
	file := "pristine.txt"
	if name == "GPL-2.0" {
		file = "license.txt" // the corpus has no pristine GPL text
	}
	data, err := assets.ReadLicenseFile("License/" + name + "/" + file)
	if err != nil {
		panic(err) // the corpus is embedded: a missing text is a bug here
	}
	return string(data)
}

type testModule struct {
	path, version string
	files         map[string]string
}

// pkgDir is the directory of the package the program imports of each
// module: the root but for example.com/brit.
func pkgDir(modPath string) string {
	if modPath == "example.com/brit" {
		return "sub"
	}
	return ""
}

func testModules() []testModule {
	return []testModule{
		{"example.com/apache", "v1.0.0", map[string]string{
			"LICENSE": corpus("Apache-2.0"),
			"NOTICE":  "Apache Example\nCopyright 2024 The Example Authors.\n\nThis product includes software developed at Example (https://example.com/).\n",
		}},
		{"example.com/mit", "v1.2.0", map[string]string{
			"LICENSE.txt": "MIT License\n\nCopyright (c) 2024 The MIT Example Authors\n\n" + corpus("MIT"),
		}},
		// Its package is in a subdirectory: go mod vendor copies from the
		// module root only LICENSE*, COPYING*, NOTICE*..., not "LICENCE".
		// Its package directory has a notice of its own, which counts; the
		// testdata and _examples licences cover no package of a build, and
		// a list of licence ids, a Go file or a script is no licence.
		{"example.com/brit", "v1.0.0", map[string]string{
			"LICENCE":             "MIT License\n\nCopyright (c) 2024 The British Authors\n\n" + corpus("MIT"),
			"LICENCE-check":       "#!/bin/sh\n# lists the sources without a licence header\ngrep -L Copyright */*.go\n",
			"sub/NOTICE":          "The sub package includes code by the Sub Authors.\n",
			"sub/license_ids.txt": "MIT\nApache-2.0\n",
			"sub/license.go":      "package lib\n\n// Licence is a word.\nconst Licence = \"MIT\"\n",
			"testdata/LICENSE":    corpus("GPL-2.0"),
			"_examples/LICENSE":   corpus("GPL-2.0"),
		}},
		{"example.com/mpl", "v0.3.0", map[string]string{"LICENSE": corpus("MPL-2.0")}},
		{"example.com/bare", "v1.0.0", map[string]string{"README.md": "No licence here.\n"}},
		{"example.com/custom", "v1.0.0", map[string]string{
			"LICENSE": "The Custom Licence\n\nYou may run this program on Tuesdays only, and must never sell it to anyone named Bob.\n",
		}},
		// example.com/old is replaced by example.com/new in the main go.mod.
		{"example.com/new", "v1.1.0", map[string]string{
			"COPYING": "ISC License\n\nCopyright (c) 2024 The New Authors\n\n" + corpus("ISC"),
		}},
	}
}

type fixture struct {
	root   string
	proxy  *httptest.Server
	mu     sync.Mutex
	hits   map[string]int // request path -> count
	zips   map[string][]byte
	src    string // the main module's source directory
	binary string // built with -mod=mod
	cache  string // GOMODCACHE the build populated
	// vendored: the same program built from a vendor directory.
	vendorSrc, vendorBinary string
	// licence is each module's licence text as shipped, by module path.
	licence map[string]string
}

var (
	fixtureOnce sync.Once
	theFixture  *fixture
	fixtureErr  error
)

// getFixture builds the fixture once for the package's tests.
func getFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	fixtureOnce.Do(func() {
		theFixture, fixtureErr = newFixture()
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return theFixture
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theFixture != nil {
		theFixture.proxy.Close()
		os.RemoveAll(theFixture.root)
	}
	os.Exit(code)
}

func newFixture() (*fixture, error) {
	root, err := os.MkdirTemp("", "golicenses-test-*")
	if err != nil {
		return nil, err
	}
	f := &fixture{root: root, hits: map[string]int{}, zips: map[string][]byte{}, licence: map[string]string{}}
	mods := testModules()
	for _, m := range mods {
		if err := f.addModule(m); err != nil {
			return nil, err
		}
	}
	f.proxy = httptest.NewServer(http.HandlerFunc(f.serve))
	f.src = filepath.Join(root, "src")
	f.cache = filepath.Join(root, "modcache")
	if err := f.writeMain(f.src); err != nil {
		return nil, err
	}
	f.binary = filepath.Join(root, "app")
	if out, err := f.goCmd(f.src, f.env(f.cache), "build", "-o", f.binary, "."); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	// The vendored copy: go mod vendor, then a build that reads only
	// vendor/ (no proxy, an empty module cache).
	f.vendorSrc = filepath.Join(root, "vsrc")
	if err := f.writeMain(f.vendorSrc); err != nil {
		return nil, err
	}
	if err := copyFile(filepath.Join(f.src, "go.sum"), filepath.Join(f.vendorSrc, "go.sum")); err != nil {
		return nil, err
	}
	if out, err := f.goCmd(f.vendorSrc, f.env(f.cache), "mod", "vendor"); err != nil {
		return nil, fmt.Errorf("go mod vendor: %v\n%s", err, out)
	}
	f.vendorBinary = filepath.Join(root, "vapp")
	venv := f.env(filepath.Join(root, "empty-cache"), "GOPROXY=off", "GOFLAGS=-mod=vendor -modcacherw")
	if out, err := f.goCmd(f.vendorSrc, venv, "build", "-o", f.vendorBinary, "."); err != nil {
		return nil, fmt.Errorf("go build -mod=vendor: %v\n%s", err, out)
	}
	return f, nil
}

// addModule makes a module's zip as the proxy serves it.
func (f *fixture) addModule(m testModule) error {
	dir := filepath.Join(f.root, "modsrc", m.path+"@"+m.version)
	files := map[string]string{
		"go.mod":                               "module " + m.path + "\n\ngo 1.21\n",
		pathpkg.Join(pkgDir(m.path), "lib.go"): "package lib\n\nfunc Name() string { return \"" + m.path + "\" }\n",
	}
	for n, c := range m.files {
		files[n] = c
		if artifactLicense(n) {
			f.licence[m.path] = c
		}
	}
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	return f.serveDir(m.path, m.version, dir)
}

// serveDir makes the proxy serve dir as module path@version.
func (f *fixture) serveDir(path, version, dir string) error {
	var buf bytes.Buffer
	if err := modzip.CreateFromDir(&buf, module.Version{Path: path, Version: version}, dir); err != nil {
		return fmt.Errorf("zip %s: %w", path, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zips[path+"@"+version] = buf.Bytes()
	return nil
}

// artifactLicense is the licence (not notice) file of a test module.
func artifactLicense(name string) bool {
	return strings.HasPrefix(name, "LICENSE") || name == "LICENCE" || name == "COPYING"
}

// writeMain writes the main module: it imports one package of each test
// module, replaces example.com/old with example.com/new and
// example.com/local with a directory of its own.
func (f *fixture) writeMain(dir string) error {
	var imports, calls []string
	requires := []string{}
	for i, m := range testModules() {
		p := m.path
		if p == "example.com/new" {
			p = "example.com/old"
			requires = append(requires, "\texample.com/old v1.0.0")
		} else {
			requires = append(requires, "\t"+p+" "+m.version)
		}
		imports = append(imports, fmt.Sprintf("\tm%d %q", i, pathpkg.Join(p, pkgDir(m.path))))
		calls = append(calls, fmt.Sprintf("m%d.Name()", i))
	}
	requires = append(requires, "\texample.com/local v0.0.0")
	imports = append(imports, "\t\"example.com/local\"")
	calls = append(calls, "local.Name()")
	slices.Sort(requires)
	gomod := "module example.com/app\n\ngo 1.21\n\nrequire (\n" + strings.Join(requires, "\n") + "\n)\n\n" +
		"replace example.com/old => example.com/new v1.1.0\n\nreplace example.com/local => ./local\n"
	main := "package main\n\nimport (\n\t\"fmt\"\n\n" + strings.Join(imports, "\n") + "\n)\n\nfunc main() {\n\tfmt.Println(" + strings.Join(calls, ", ") + ")\n}\n"
	return writeFiles(dir, map[string]string{
		"go.mod":         gomod,
		"main.go":        main,
		"LICENSE":        corpus("BSD-2-Clause"),
		"local/go.mod":   "module example.com/local\n\ngo 1.21\n",
		"local/local.go": "package local\n\nfunc Name() string { return \"local\" }\n",
		"local/LICENSE":  "Copyright (c) 2024 The Local Authors. All rights reserved.\n\n" + corpus("BSD-3-Clause"),
	})
}

// serve is the module proxy protocol for the test modules.
func (f *fixture) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits[r.URL.Path]++
	modPath, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/@v/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "list" {
		for k := range f.zips {
			if p, v, _ := strings.Cut(k, "@"); p == modPath {
				fmt.Fprintln(w, v)
			}
		}
		return
	}
	ext := filepath.Ext(rest)
	z, found := f.zips[modPath+"@"+strings.TrimSuffix(rest, ext)]
	if !found {
		http.NotFound(w, r)
		return
	}
	switch ext {
	case ".info":
		fmt.Fprintf(w, `{"Version":%q,"Time":"2024-01-01T00:00:00Z"}`, strings.TrimSuffix(rest, ext))
	case ".mod":
		fmt.Fprintf(w, "module %s\n\ngo 1.21\n", modPath)
	case ".zip":
		w.Write(z)
	default:
		http.NotFound(w, r)
	}
}

// zipHits counts the zip downloads the proxy served.
func (f *fixture) zipHits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for p, c := range f.hits {
		if strings.HasSuffix(p, ".zip") {
			n += c
		}
	}
	return n
}

// env is a go command environment with the loopback proxy and modcache,
// nothing from the user's go settings; extra entries win.
func (f *fixture) env(modcache string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO") && !strings.HasPrefix(kv, "CGO_") {
			env = append(env, kv)
		}
	}
	if gocache, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		// The user's build cache: the standard library is compiled once.
		env = append(env, "GOCACHE="+strings.TrimSpace(string(gocache)))
	}
	env = append(env,
		"GOPROXY="+f.proxy.URL, "GOSUMDB=off", "GONOSUMDB=example.com", "GOFLAGS=-mod=mod -modcacherw",
		"GOMODCACHE="+modcache, "GOPATH="+filepath.Join(f.root, "gopath"), "GOWORK=off", "GOENV=off",
		"GOTOOLCHAIN=local", "CGO_ENABLED=0")
	return append(env, extra...)
}

func (f *fixture) goCmd(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	return cmd.CombinedOutput()
}

// goSum is the h1: hash go.sum records for a module's zip.
func (f *fixture) goSum(t *testing.T, path, version string) string {
	t.Helper()
	file, err := os.Open(filepath.Join(f.src, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	for s.Scan() {
		if fs := strings.Fields(s.Text()); len(fs) == 3 && fs[0] == path && fs[1] == version {
			return fs[2]
		}
	}
	t.Fatalf("go.sum has no %s %s", path, version)
	return ""
}

// cacheZip is a module's zip in a module cache.
func cacheZip(cache, path, version string) string {
	return filepath.Join(cache, "cache", "download", path, "@v", version+".zip")
}

func writeFiles(dir string, files map[string]string) error {
	for n, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
