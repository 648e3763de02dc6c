package artifact_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// appModule writes a module that imports four modules the proxy serves:
// greet from its main package, tagdep only under the build tag "extra",
// osdep only on another GOOS than the host's, and testdep only from a
// test. It returns the module's directory.
func appModule(t *testing.T, p *modProxy) string {
	t.Helper()
	other := "windows"
	if runtime.GOOS == other {
		other = "linux"
	}
	dir := t.TempDir()
	files := map[string]string{
		"main.go":             "package main\n\nimport \"example.com/lib/greet\"\n\nfunc main() { println(greet.Name()) }\n",
		"extra.go":            "//go:build extra\n\npackage main\n\nimport \"example.com/lib/tagdep\"\n\nfunc init() { println(tagdep.Name()) }\n",
		"os_" + other + ".go": "package main\n\nimport \"example.com/lib/osdep\"\n\nfunc init() { println(osdep.Name()) }\n",
		"main_test.go":        "package main\n\nimport (\n\t\"testing\"\n\n\t\"example.com/lib/testdep\"\n)\n\nfunc TestName(t *testing.T) { _ = testdep.Name() }\n",
	}
	gomod := "module example.com/app\n\ngo 1.22\n\nrequire (\n"
	var gosum string
	for _, name := range []string{"greet", "osdep", "tagdep", "testdep"} {
		path := "example.com/lib/" + name
		mod := "module " + path + "\n\ngo 1.22\n"
		sum := p.addModule(t, path, "v1.0.0", map[string]string{
			"go.mod":     mod,
			"LICENSE":    "MIT, for the test\n",
			name + ".go": "package " + name + "\n\nfunc Name() string { return \"" + name + "\" }\n",
		})
		gomod += "\t" + path + " v1.0.0\n"
		gosum += fmt.Sprintf("%s v1.0.0 %s\n%s v1.0.0/go.mod %s\n", path, sum.zip, path, sum.mod)
	}
	files["go.mod"] = gomod + ")\n"
	files["go.sum"] = gosum
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mirroredZips lists the modules whose zip the mirror's GOPROXY serves.
func mirroredZips(t *testing.T, mirror string) []string {
	t.Helper()
	var got []string
	download := filepath.Join(artifact.ModuleCache(mirror), "cache", "download")
	filepath.WalkDir(download, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".zip") {
			return err
		}
		rel, _ := filepath.Rel(download, path)
		mod, _, _ := strings.Cut(filepath.ToSlash(rel), "/@v/")
		p, err := module.UnescapePath(mod)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
		return nil
	})
	slices.Sort(got)
	return got
}

// The mirror holds what the build of the selected packages reads, for
// its platform and with its settings (tags, GOFLAGS): not the modules that
// only a test, an unset build tag or another GOOS import, which go mod
// download fetched too. Nor the unpacked trees: only the file:// proxy
// is read. An offline build with the proxy gone and an empty module cache
// builds from that mirror alone.
func TestMirrorHoldsWhatTheBuildReads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tags  []string
		env   []string
		zips  []string
		print string
	}{
		{name: "plain", zips: []string{"example.com/lib/greet"}, print: "greet"},
		{name: "tags", tags: []string{"extra"}, zips: []string{"example.com/lib/greet", "example.com/lib/tagdep"}, print: "tagdep\ngreet"},
		{name: "goflags", env: []string{"GOFLAGS=-tags=extra"}, zips: []string{"example.com/lib/greet", "example.com/lib/tagdep"}, print: "tagdep\ngreet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newModProxy(t)
			dir := appModule(t, p)
			req := &artifact.Request{Name: "app", Platform: hostPlatform(t),
				Kind: &artifact.Go{Module: dir, Packages: []string{"."}, Tags: tc.tags, Env: tc.env, Trimpath: true}}
			mirror := t.TempDir()
			if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{req}); err != nil {
				t.Fatal(err)
			}
			if got := mirroredZips(t, mirror); !slices.Equal(got, tc.zips) {
				t.Errorf("the mirror holds the zips of %v, want %v", got, tc.zips)
			}
			if entries, err := os.ReadDir(artifact.ModuleCache(mirror)); err != nil || len(entries) != 2 || entries[0].Name() != ".pallet-module-cache" || entries[1].Name() != "cache" {
				t.Errorf("the mirror's module cache holds %v (%v), want only pallet's mark and cache/", entries, err)
			}

			p.Close()
			t.Setenv("GOMODCACHE", t.TempDir())
			f := fetcher(t)
			f.Offline, f.Mirror = true, mirror
			res, err := f.Fetch(context.Background(), req, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			e, ok := res.Tree.Get("app") // the module path's last element
			if !ok {
				t.Fatalf("no binary in the tree: %v", res.Tree.Entries())
			}
			out, err := exec.Command(e.Source).CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != tc.print {
				t.Errorf("the offline build printed %q (%v), want %q", got, err, tc.print)
			}
		})
	}
}

// In vendor mode the build reads vendor/ and loading its packages fetches
// no module; but the licences of what it links are looked for in the
// modules' zips (go mod vendor leaves licence files out), so the mirror
// holds those, and only those.
func TestMirrorVendoredModules(t *testing.T) {
	p := newModProxy(t)
	dir := appModule(t, p)
	cmd := exec.Command("go", "mod", "vendor")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
	req := &artifact.Request{Name: "app", Platform: hostPlatform(t),
		Kind: &artifact.Go{Module: dir, Packages: []string{"."}, Trimpath: true}}
	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{req}); err != nil {
		t.Fatal(err)
	}
	if got, want := mirroredZips(t, mirror), []string{"example.com/lib/greet"}; !slices.Equal(got, want) {
		t.Errorf("the mirror holds the zips of %v, want %v", got, want)
	}
}

// Modules unpacked into the mirror by a go command without -modcacherw,
// as the docs' GOMODCACHE=MIRROR/gomod go mod download leaves them, are
// read-only: fetch prunes them all the same, and keeps cache/. (Root
// removes them whatever their mode: run as another user to see that.)
func TestMirrorPrunesReadOnlyTrees(t *testing.T) {
	mirror := t.TempDir()
	if err := artifact.ClaimModuleCache(mirror); err != nil {
		t.Fatal(err)
	}
	cache := artifact.ModuleCache(mirror)
	tree := filepath.Join(cache, "example.com", "lib", "greet@v1.0.0")
	zip := filepath.Join(cache, "cache", "download", "example.com", "lib", "greet", "@v", "v1.0.0.zip")
	for _, f := range []string{filepath.Join(tree, "greet.go"), zip} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(tree, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(tree, 0o755) })
	if err := fetcher(t).MirrorTo(context.Background(), mirror, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, "example.com")); !os.IsNotExist(err) {
		t.Errorf("the unpacked module is still there: %v", err)
	}
	if _, err := os.Stat(zip); err != nil {
		t.Errorf("the zip went too: %v", err)
	}
}
