package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

const gomodPath = "example.com/tools/hello"

// gomodProxy serves one module, example.com/tools/hello v1.0.0 (a command
// and its licence), over the GOPROXY protocol on loopback, points the go
// command at it with a module cache of the test's own, and returns the
// module's go.sum hash and the count of zips served.
func gomodProxy(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	return gomodProxyOrigin(t, "")
}

// gomodProxyOrigin is gomodProxy whose .info says the version was made
// from commit, as proxy.golang.org's do, unless commit is empty.
func gomodProxyOrigin(t *testing.T, commit string) (string, *atomic.Int32) {
	t.Helper()
	var origin map[string]string
	if commit != "" {
		origin = map[string]string{"VCS": "git", "URL": "https://example.com/tools/hello", "Hash": commit, "Ref": "refs/tags/v1.0.0"}
	}
	return serveModule(t, gomodPath, "v1.0.0", origin, map[string]string{
		"go.mod":            "module " + gomodPath + "\n\ngo 1.22\n",
		"LICENSE":           "MIT, for the test\n",
		"cmd/hello/main.go": "package main\n\nvar commit string\n\nfunc main() {\n\tprintln(\"hello from the module proxy\")\n\tif commit != \"\" {\n\t\tprintln(commit)\n\t}\n}\n",
	})
}

// serveModule serves one module, modPath@version made of files, over the
// GOPROXY protocol on loopback, points the go command at it with a module
// cache of the test's own, and returns the module's go.sum hash and the
// count of zips served. The .info carries origin when it is not nil, as
// proxy.golang.org's do.
func serveModule(t *testing.T, modPath, version string, origin map[string]string, files map[string]string) (string, *atomic.Int32) {
	t.Helper()
	src := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(src, filepath.FromSlash(name)), content)
	}
	mv := module.Version{Path: modPath, Version: version}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, mv, src); err != nil {
		t.Fatal(err)
	}
	zipFile := filepath.Join(t.TempDir(), "module.zip")
	if err := os.WriteFile(zipFile, zip.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"Version": mv.Version, "Time": "2024-01-02T03:04:05Z"}
	if origin != nil {
		meta["Origin"] = origin
	}
	info, _ := json.Marshal(meta)
	served := map[string][]byte{
		"/@v/list":                 []byte(version + "\n"),
		"/@v/" + version + ".info": info,
		"/@v/" + version + ".mod":  []byte(files["go.mod"]),
		"/@v/" + version + ".zip":  zip.Bytes(),
	}
	var zips atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := served[strings.TrimPrefix(r.URL.Path, "/"+modPath)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".zip") {
			zips.Add(1)
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("GOPROXY", srv.URL)
	t.Setenv("GONOSUMDB", "example.com")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw") // so that the test's module cache can be deleted
	return sum, &zips
}

// gomodRecipe builds the module twice: as a gomod artifact, and as the
// source mode of an artifact with modes.
func gomodRecipe(t *testing.T, plat, sum string) string {
	t.Helper()
	kind := "      module: " + gomodPath + "\n      version: v1.0.0\n      sum: " + sum + "\n      packages: ./cmd/hello\n"
	recipe := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  hello:
    gomod:
`+kind+`  hello-src:
    default: source
    modes:
      source:
        gomod:
`+strings.ReplaceAll(kind, "      ", "          ")+`      local: {}
images:
  hello:
    base: scratch
    platforms: [`+plat+`]
    files:
      - {artifact: hello, dest: /usr/local/bin/}
      - {artifact: hello-src, dest: /opt/src/bin/}
`)
	return recipe
}

// imageFile returns the bytes of one file of the image in the layout dir.
func imageFile(t *testing.T, dir, plat, name string) []byte {
	t.Helper()
	var out []byte
	walkImage(t, layoutImage(t, dir, plat), func(h *tar.Header, r io.Reader) {
		if h.Name == name {
			out, _ = io.ReadAll(r)
		}
	})
	if out == nil {
		t.Fatalf("%s is not in the image", name)
	}
	return out
}

// A Go command published as a module is built from the module proxy
// without git, pinned by its go.sum hash: the image holds the program, the
// record names module@version and the hash, a second build takes it from
// the cache, and a wrong hash stops the build naming both.
func TestGomodBuild(t *testing.T) {
	sum, zips := gomodProxy(t)
	plat := "linux/" + runtime.GOARCH
	recipe := gomodRecipe(t, plat, sum)
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+out)

	for _, p := range []string{"usr/local/bin/hello", "opt/src/bin/hello"} {
		bin := imageFile(t, out, plat, p)
		info, err := buildinfo.Read(bytes.NewReader(bin))
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Main; m.Path != gomodPath || m.Version != "v1.0.0" || m.Sum != sum {
			t.Errorf("%s: build info's main module %s %s %s, want %s v1.0.0 %s", p, m.Path, m.Version, m.Sum, gomodPath, sum)
		}
		if runtime.GOOS != "linux" {
			continue
		}
		exe := filepath.Join(t.TempDir(), "hello")
		if err := os.WriteFile(exe, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(exe).CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != "hello from the module proxy" {
			t.Errorf("running %s: %v: %q", p, err, got)
		}
	}
	if lic := imageFile(t, out, plat, "LICENSES/hello/LICENSE"); string(lic) != "MIT, for the test\n" {
		t.Errorf("licence %q", lic)
	}
	rec := readRecord(t, out+".record.json")
	modes := map[string]string{}
	for _, a := range rec.Artifacts {
		modes[a.Name] = a.Mode
		if a.Kind != "gomod" || a.Module != gomodPath+"@v1.0.0" || a.SHA256 != sum || a.Repo != "" || a.URL != "" {
			t.Errorf("%s: record %+v", a.Name, a.Record)
		}
		// Built as go install builds a module version: the binary
		// itself names the version (not (devel)) for scanners to read.
		if len(a.GoBinaries) != 1 || a.GoBinaries[0].MainModule != gomodPath || a.GoBinaries[0].MainVersion != "v1.0.0" {
			t.Errorf("%s: Go binaries %+v", a.Name, a.GoBinaries)
		}
	}
	if modes["hello"] != "" || modes["hello-src"] != "source" {
		t.Errorf("recorded modes %v", modes)
	}

	// The SBOM names the main module by the version its pin proves, once:
	// the module's element, not again on the two artifacts built from it.
	sboms := filepath.Join(t.TempDir(), "sbom")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "out"), "--sbom", "--sbom-dir", sboms)
	cdx, err := os.ReadFile(filepath.Join(sboms, "hello_"+strings.ReplaceAll(plat, "/", "-")+".sbom.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	purls := regexp.MustCompile(`"pkg:golang/`+regexp.QuoteMeta(gomodPath)+`[^"]*"`).FindAllString(string(cdx), -1)
	if want := `"pkg:golang/` + gomodPath + `@v1.0.0"`; len(purls) != 1 || purls[0] != want {
		t.Errorf("the CycloneDX SBOM's purls of the module are %q, want %s once, the module's", purls, want)
	}

	// Again, with the same cache: nothing is downloaded or built.
	served := zips.Load()
	entries := countFiles(t, filepath.Join(cache, "artifacts"))
	log := mustPallet(t, "build", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "again"))
	if !strings.Contains(log, "artifact hello ("+plat+")") || strings.Count(log, "cached") < 2 {
		t.Errorf("the second build does not say it took both artifacts from the cache:\n%s", log)
	}
	if n := countFiles(t, filepath.Join(cache, "artifacts")); n != entries || zips.Load() != served {
		t.Errorf("the second build made %d cache entries and fetched %d zips", n-entries, zips.Load()-served)
	}

	// A pin the module does not match: no image, an error naming both.
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	bad := filepath.Join(t.TempDir(), "out")
	_, err = pallet(t, "build", "-q", "-f", gomodRecipe(t, plat, wrong), "--cache-dir", cache, "-o", "oci:"+bad)
	if err == nil {
		t.Fatal("a wrong go.sum hash was accepted")
	}
	for _, want := range []string{gomodPath + "@v1.0.0", wrong, sum} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("output written by a build with a wrong pin")
	}
}

// gomod.commit gives {{commit}}, for the revision a program prints; it is
// recorded, and a commit the module proxy contradicts stops the build.
func TestGomodCommit(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	sum, _ := gomodProxyOrigin(t, commit)
	plat := "linux/" + runtime.GOARCH
	recipe := filepath.Join(t.TempDir(), "pallet.yaml")
	write := func(c string) {
		writeFile(t, recipe, `version: 1
artifacts:
  hello:
    gomod:
      module: `+gomodPath+`
      version: v1.0.0
      sum: `+sum+`
      commit: `+c+`
      packages: ./cmd/hello
      ldflags: ["-X main.commit={{commit}}"]
images:
  hello:
    base: scratch
    platforms: [`+plat+`]
    files:
      - {artifact: hello, dest: /usr/local/bin/}
`)
	}
	write(commit)
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	if runtime.GOOS == "linux" {
		exe := filepath.Join(t.TempDir(), "hello")
		if err := os.WriteFile(exe, imageFile(t, out, plat, "usr/local/bin/hello"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(exe).CombinedOutput()
		if err != nil || !strings.Contains(string(got), commit) {
			t.Errorf("the program printed %q (%v), without the commit", got, err)
		}
	}
	if rec := readRecord(t, out+".record.json"); len(rec.Artifacts) != 1 || rec.Artifacts[0].Commit != commit {
		t.Errorf("record %+v", rec.Artifacts)
	}
	other := strings.Repeat("ab", 20)
	write(other)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil || !strings.Contains(err.Error(), "the module proxy says the version was made from git "+commit) || !strings.Contains(err.Error(), other) {
		t.Errorf("a commit the proxy contradicts: %v", err)
	}
}

// A version the module proxy does not serve fails naming the proxy the
// user set (GOPROXY), not the loopback gate pallet puts in front of it,
// whose address means nothing to whoever reads the error.
func TestGomodUnservedVersionNamesProxy(t *testing.T) {
	sum, _ := gomodProxy(t)
	proxy := os.Getenv("GOPROXY")
	recipe := strings.Replace(readFileString(t, gomodRecipe(t, "linux/"+runtime.GOARCH, sum)), "version: v1.0.0", "version: v1.0.1", 1)
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, file, recipe)
	_, err := pallet(t, "build", "-q", "-f", file, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("a version the proxy does not serve was built")
	}
	if want := proxy + "/" + gomodPath + "/@v/v1.0.1."; !strings.Contains(err.Error(), want) {
		t.Errorf("the error names no %s...:\n%v", want, err)
	}
	if regexp.MustCompile(`127\.0\.0\.1:\d+/\d+/http/`).MatchString(err.Error()) {
		t.Errorf("the error names pallet's module proxy gate:\n%v", err)
	}
}

// A commit the module proxy cannot vouch for (its .info names none) is
// built with, and said to be unchecked.
func TestGomodCommitUnchecked(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	sum, _ := gomodProxy(t)
	recipe := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  hello:
    gomod:
      module: `+gomodPath+`
      version: v1.0.0
      sum: `+sum+`
      commit: `+commit+`
      packages: ./cmd/hello
    licenses: none
images:
  hello:
    base: scratch
    platforms: [linux/`+runtime.GOARCH+`]
    files:
      - {artifact: hello, dest: /usr/local/bin/}
`)
	out := mustPallet(t, "build", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if want := "gomod.commit " + commit + " is not checked: the module proxy names no commit"; !strings.Contains(out, want) {
		t.Errorf("build output does not say %q:\n%s", want, out)
	}
}
