package lock

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/pallet-dev/pallet/internal/recipe"
)

const modPath = "example.com/tools/hello"

// moduleZip makes a zip of modPath v1.0.0 holding files, and returns it
// with its go.sum hash.
func moduleZip(t *testing.T, files map[string]string) ([]byte, string) {
	t.Helper()
	src := t.TempDir()
	for name, content := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, module.Version{Path: modPath, Version: "v1.0.0"}, src); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "module.zip")
	if err := os.WriteFile(file, zip.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := dirhash.HashZip(file, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return zip.Bytes(), sum
}

var helloFiles = map[string]string{
	"go.mod":            "module " + modPath + "\n\ngo 1.22\n",
	"cmd/hello/main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
}

// serveModuleProxy serves modPath v1.0.0 as zip over the GOPROXY
// protocol on loopback and points the go command at it, with a module
// cache of the test's own.
func serveModuleProxy(t *testing.T, zip []byte) *site {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	base := "/" + modPath + "/@v/"
	s := newSite(t, map[string][]byte{
		base + "list":        []byte("v1.0.0\n"),
		base + "v1.0.0.info": []byte(`{"Version":"v1.0.0","Time":"2024-01-02T03:04:05Z"}`),
		base + "v1.0.0.mod":  []byte(helloFiles["go.mod"]),
		base + "v1.0.0.zip":  zip,
	})
	t.Setenv("GOPROXY", s.URL)
	t.Setenv("GONOSUMDB", "example.com")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw") // so that the test's module cache can be deleted
	return s
}

// gomodRecipe is a recipe building the module, its sum line as given.
func gomodRecipe(sumLine string) string {
	return `version: 1
artifacts:
  hello:
    gomod:   # by version
      module: ` + modPath + `
      version: v1.0.0   # the release
` + sumLine + `      packages: ./cmd/hello
    licenses: none
images:
  hello:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: hello, dest: /usr/local/bin/}
`
}

func writeRecipe(t *testing.T, src string) *world {
	t.Helper()
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return &world{file: file, src: src}
}

// A missing gomod.sum is reported by --check, and written by lock on a
// line of its own after the version, changing nothing else; a build
// then reads the recipe.
func TestLockGomodSumMissing(t *testing.T) {
	zip, sum := moduleZip(t, helloFiles)
	serveModuleProxy(t, zip)
	w := writeRecipe(t, gomodRecipe(""))
	if _, err := recipe.Parse(w.file, []byte(w.src)); err == nil || !strings.Contains(err.Error(), "pallet lock writes it") {
		t.Errorf("a build of the recipe without a sum: %v, want it to say pallet lock writes it", err)
	}

	rep, err := w.lock(t, Options{Check: true})
	var pe *PinsError
	if !errors.As(err, &pe) || len(rep.Findings) != 1 || rep.Findings[0].Stale() || rep.Findings[0].New != sum {
		t.Fatalf("check: %v, %+v", err, rep)
	}
	f := rep.Findings[0]
	if f.Pos.Line != 4 || !strings.Contains(err.Error(), "no sum of "+modPath+"@v1.0.0 (the module proxy gives "+sum+")") {
		t.Errorf("check: finding at line %d: %v", f.Pos.Line, err)
	}
	if w.read(t) != w.src {
		t.Errorf("check wrote the recipe:\n%s", w.read(t))
	}

	rep, err = w.lock(t, Options{})
	if err != nil || !rep.Written {
		t.Fatalf("lock: %v, %+v", err, rep)
	}
	if got, want := w.read(t), gomodRecipe("      sum: "+sum+"\n"); got != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", got, want)
	}
	if _, err := recipe.Parse(w.file, []byte(w.read(t))); err != nil {
		t.Errorf("the locked recipe does not parse for a build: %v", err)
	}
	rep, err = w.lock(t, Options{Check: true})
	if err != nil || len(rep.Findings) != 0 || rep.Current != 1 {
		t.Errorf("check after lock: %v, %+v", err, rep)
	}
}

// An empty sum (sum: "" or sum:) is filled in where it is, a quoted one
// quoted.
func TestLockGomodSumEmpty(t *testing.T) {
	zip, sum := moduleZip(t, helloFiles)
	serveModuleProxy(t, zip)
	for _, line := range []string{`      sum: ""   # lock fills it` + "\n", "      sum:\n"} {
		w := writeRecipe(t, gomodRecipe(line))
		if _, err := w.lock(t, Options{}); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		// A quoted value stays quoted, as lock writes other pins.
		want := gomodRecipe(strings.Replace(strings.Replace(line, `""`, `"`+sum+`"`, 1), "sum:\n", "sum: "+sum+"\n", 1))
		if got := w.read(t); got != want {
			t.Errorf("%q: locked recipe:\n%s\nwant:\n%s", line, got, want)
		}
	}
}

// A sum the module proxy's zip does not have (a re-published version, or
// another module's) is stale: reported, and nothing written, unless
// --update re-pins it.
func TestLockGomodSumStale(t *testing.T) {
	_, other := moduleZip(t, map[string]string{
		"go.mod":            helloFiles["go.mod"],
		"cmd/hello/main.go": "package main\n\nfunc main() { println(\"the first upload\") }\n",
	})
	zip, sum := moduleZip(t, helloFiles)
	if other == sum {
		t.Fatal("two modules, one sum")
	}
	serveModuleProxy(t, zip)
	src := gomodRecipe("      sum: " + other + "   # pinned before\n")
	w := writeRecipe(t, src)

	for _, opt := range []Options{{}, {Check: true}} {
		rep, err := w.lock(t, opt)
		var pe *PinsError
		if !errors.As(err, &pe) || len(rep.Findings) != 1 || !rep.Findings[0].Stale() || rep.Written {
			t.Fatalf("lock %+v of a stale sum: %v, %+v", opt, err, rep)
		}
		want := "sum of " + modPath + "@v1.0.0 is " + other + " in the recipe, but the module proxy now gives " + sum
		if !strings.Contains(err.Error(), want) || rep.Findings[0].Pos.Line != 7 {
			t.Errorf("lock %+v: %v (line %d), want %q", opt, err, rep.Findings[0].Pos.Line, want)
		}
		if !opt.Check && !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("lock: %v, want it to say nothing was written", err)
		}
		if w.read(t) != src {
			t.Errorf("lock %+v wrote the recipe:\n%s", opt, w.read(t))
		}
	}

	rep, err := w.lock(t, Options{Update: true})
	if err != nil || !rep.Written {
		t.Fatalf("lock --update: %v, %+v", err, rep)
	}
	if got, want := w.read(t), gomodRecipe("      sum: "+sum+"   # pinned before\n"); got != want {
		t.Errorf("re-pinned recipe:\n%s\nwant:\n%s", got, want)
	}
	if _, err := recipe.Parse(w.file, []byte(w.read(t))); err != nil {
		t.Errorf("the re-pinned recipe does not parse for a build: %v", err)
	}
}

// The module's zip is held to the recipe's download limit, as a build's is.
func TestLockGomodLimit(t *testing.T) {
	zip, _ := moduleZip(t, helloFiles)
	serveModuleProxy(t, zip)
	src := strings.Replace(gomodRecipe(""), "version: 1\n", "version: 1\nlimits: {download: 100B}\n", 1)
	w := writeRecipe(t, src)
	_, err := w.lock(t, Options{})
	if err == nil || !strings.Contains(err.Error(), "limits.download") {
		t.Errorf("lock of a module over the download limit: %v", err)
	}
	if w.read(t) != src {
		t.Errorf("lock wrote the recipe:\n%s", w.read(t))
	}
}

// Lock asked for one platform writes the sum of a gomod section whose
// module version reads otherwise on a platform it was not asked about:
// its check of what it wrote reads the sections where it was asked.
func TestLockGomodSumOnePlatform(t *testing.T) {
	zip, sum := moduleZip(t, helloFiles)
	serveModuleProxy(t, zip)
	src := strings.Replace(gomodRecipe(""), "version: v1.0.0   # the release", "version: v1.0.0{{exe}}", 1)
	src = strings.Replace(src, "[linux/amd64, linux/arm64]", "[linux/amd64, windows/amd64]", 1)
	w := writeRecipe(t, src)
	rep, err := w.lock(t, Options{Platforms: []string{"linux/amd64"}})
	if err != nil || !rep.Written {
		t.Fatalf("lock --platform linux/amd64: %v, %+v", err, rep)
	}
	if got, want := w.read(t), strings.Replace(src, "{{exe}}\n", "{{exe}}\n      sum: "+sum+"\n", 1); got != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", got, want)
	}
}

// A gomod section whose ldflags use {{commit}} without a commit is a pin
// lock cannot fill (the module proxy gives no commit): --check fails at
// its line saying to write upstream's commit, and lock writes the sum it
// resolved and fails the same way.
func TestLockGomodCommitUnfillable(t *testing.T) {
	zip, sum := moduleZip(t, helloFiles)
	serveModuleProxy(t, zip)
	withFlags := func(sumLine string) string {
		return strings.Replace(gomodRecipe(sumLine), "      packages: ./cmd/hello\n", "      packages: ./cmd/hello\n      ldflags: [\"-X main.commit={{commit}}\"]\n", 1)
	}
	w := writeRecipe(t, withFlags(""))
	want := w.file + ":8: {{commit}} is the commit"

	rep, err := w.lock(t, Options{Check: true})
	var pe *PinsError
	if !errors.As(err, &pe) || len(pe.Unfillable) != 1 || len(rep.Findings) != 1 {
		t.Fatalf("check: %v, %+v", err, rep)
	}
	if msg := err.Error(); !strings.Contains(msg, "2 pin(s) missing, 0 stale") || !strings.Contains(msg, want) || !strings.Contains(msg, "write upstream's commit by hand") {
		t.Errorf("check: %v, want %q and a hint to write the commit", err, want)
	}
	if w.read(t) != w.src {
		t.Errorf("check wrote the recipe:\n%s", w.read(t))
	}

	rep, err = w.lock(t, Options{})
	if !errors.As(err, &pe) || len(pe.Unfillable) != 1 || !rep.Written || !strings.Contains(err.Error(), want) {
		t.Fatalf("lock: %v, %+v", err, rep)
	}
	if got, want := w.read(t), withFlags("      sum: "+sum+"\n"); got != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", got, want)
	}
	// Locked, it still fails at the commit, with nothing else to pin.
	if _, err = w.lock(t, Options{}); !errors.As(err, &pe) || len(pe.Unfillable) != 1 || len(pe.Findings) != 0 {
		t.Errorf("lock again: %v", err)
	}
}
