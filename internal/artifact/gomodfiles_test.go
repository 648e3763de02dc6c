package artifact_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
)

const antreaPath = "example.com/antrea/v2"

// addAntrea serves a module with scripts beside its code, as Antrea keeps
// hack/windows, and returns its go.sum hash.
func (p *modProxy) addAntrea(t *testing.T) string {
	t.Helper()
	return p.addModule(t, antreaPath, "v2.4.0", map[string]string{
		"go.mod":                          "module " + antreaPath + "\n\ngo 1.22\n",
		"LICENSE":                         "Apache License\nVersion 2.0, January 2004\n",
		"cmd/agent/main.go":               "package main\n\nfunc main() {}\n",
		"hack/windows/Install-OVS.ps1":    "Write-Host ovs\n",
		"hack/windows/Helper.psm1":        "# helper\n",
		"hack/windows/third/COPYING":      "a licence of its own\n",
		"hack/linux/install.sh":           "#!/bin/sh\n",
		"build/images/windows/Dockerfile": "FROM scratch\n",
	}).zip
}

func moduleFilesRequest(t *testing.T, k *artifact.GoModuleFiles, licenses ...string) *artifact.Request {
	t.Helper()
	return &artifact.Request{Name: "scripts", Platform: hostPlatform(t), Licenses: licenses, Kind: k}
}

// A directory or a file of a module version is taken as the proxy serves
// it, proved against the sum; the record names the module, the sum and
// the path; the licences are the module's root's unless the files taken
// carry their own, or the recipe names them.
func TestGoModuleFiles(t *testing.T) {
	p := newModProxy(t)
	sum := p.addAntrea(t)
	k := &artifact.GoModuleFiles{Module: antreaPath, Version: "v2.4.0", Sum: sum, Path: "hack/windows"}
	fetch := func(k *artifact.GoModuleFiles, licenses ...string) (*artifact.Result, error) {
		return fetcher(t).Fetch(context.Background(), moduleFilesRequest(t, k, licenses...), t.TempDir())
	}
	res, err := fetch(k)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Tree); !slices.Equal(got, []string{"Helper.psm1", "Install-OVS.ps1", "third", "third/COPYING"}) {
		t.Errorf("hack/windows: %v", got)
	}
	e, _ := res.Tree.Get("Install-OVS.ps1")
	if b, err := os.ReadFile(e.Source); err != nil || string(b) != "Write-Host ovs\n" {
		t.Errorf("Install-OVS.ps1: %q, %v", b, err)
	}
	// Licences found among the files taken come first, as for a git
	// source's files.
	if got := paths(res.Licenses); !slices.Equal(got, []string{"third", "third/COPYING"}) {
		t.Errorf("licences of hack/windows: %v", got)
	}
	rec := res.Record
	if rec.Kind != "gomod-files" || rec.Module != antreaPath+"@v2.4.0" || rec.SHA256 != sum || rec.InModule != "hack/windows" {
		t.Errorf("record %+v", rec)
	}

	one := *k
	one.Path = "hack/linux/install.sh"
	if res, err = fetch(&one); err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Tree); !slices.Equal(got, []string{"install.sh"}) {
		t.Errorf("a file: %v", got)
	}
	if got := paths(res.Licenses); !slices.Equal(got, []string{"LICENSE"}) {
		t.Errorf("licences of a file: the module's, got %v", got)
	}
	if res, err = fetch(k, "LICENSE"); err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Licenses); !slices.Equal(got, []string{"LICENSE"}) {
		t.Errorf("named licences, from the module's root: %v", got)
	}

	for _, tc := range []struct{ path, want string }{
		{"hack/windws", "module " + antreaPath + "@v2.4.0: no file or directory hack/windws in that module version (nearest: hack/windows, hack/linux)"},
		{"hack/windows/Install-OVS", "(nearest: hack/windows/Install-OVS.ps1, "},
		{"docs", "(nearest: "},
	} {
		bad := *k
		bad.Path = tc.path
		_, err := fetch(&bad)
		var fe *artifact.FieldError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) || fe.Field != "path" {
			t.Errorf("path %s: %v, want a FieldError of path saying %q", tc.path, err, tc.want)
		}
	}
	if _, err := fetch(k, "NOTICE"); err == nil || !strings.Contains(err.Error(), "licence file NOTICE not found in module "+antreaPath+"@v2.4.0") {
		t.Errorf("a named licence missing: %v", err)
	}
}

// A sum the module does not match stops the fetch before any file of it
// is unpacked or taken, naming the module and both hashes.
func TestGoModuleFilesWrongSum(t *testing.T) {
	p := newModProxy(t)
	sum := p.addAntrea(t)
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	work := t.TempDir()
	k := &artifact.GoModuleFiles{Module: antreaPath, Version: "v2.4.0", Sum: wrong, Path: "hack/windows"}
	_, err := fetcher(t).Fetch(context.Background(), moduleFilesRequest(t, k), work)
	if err == nil {
		t.Fatal("a wrong sum was accepted")
	}
	for _, want := range []string{antreaPath + "@v2.4.0", wrong, sum, "mismatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "src")); err == nil {
		t.Error("the module was unpacked although its sum is wrong")
	}
}

// A second fetch of the same pin and path is the cache's, with nothing
// downloaded; another path is another entry.
func TestGoModuleFilesCached(t *testing.T) {
	p := newModProxy(t)
	sum := p.addAntrea(t)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fetcher(t)
	f.Cache = c
	k := &artifact.GoModuleFiles{Module: antreaPath, Version: "v2.4.0", Sum: sum, Path: "hack/windows"}
	first, err := f.Fetch(context.Background(), moduleFilesRequest(t, k), t.TempDir())
	if err != nil || first.Cached {
		t.Fatalf("first fetch: cached %v, %v", first != nil && first.Cached, err)
	}
	// The module cache is emptied: only pallet's cache can answer.
	t.Setenv("GOMODCACHE", t.TempDir())
	zips := p.zips.Load()
	again, err := f.Fetch(context.Background(), moduleFilesRequest(t, k), t.TempDir())
	if err != nil || !again.Cached {
		t.Fatalf("second fetch: cached %v, %v", again != nil && again.Cached, err)
	}
	if n := p.zips.Load(); n != zips {
		t.Errorf("the cached fetch downloaded %d zips", n-zips)
	}
	if !slices.Equal(paths(again.Tree), paths(first.Tree)) || again.Record.InModule != "hack/windows" {
		t.Errorf("cached: %v, record %+v", paths(again.Tree), again.Record)
	}
	other := *k
	other.Path = "hack/linux"
	if res, err := f.Fetch(context.Background(), moduleFilesRequest(t, &other), t.TempDir()); err != nil || res.Cached {
		t.Errorf("another path: cached %v, %v", res != nil && res.Cached, err)
	}
}

// pallet fetch puts the module in the mirror; an offline fetch with an
// empty module cache and the proxy gone takes the files from it.
func TestGoModuleFilesMirrorThenOffline(t *testing.T) {
	p := newModProxy(t)
	sum := p.addAntrea(t)
	k := &artifact.GoModuleFiles{Module: antreaPath, Version: "v2.4.0", Sum: sum, Path: "hack/windows/Install-OVS.ps1"}
	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{moduleFilesRequest(t, k)}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	t.Setenv("GOMODCACHE", t.TempDir())
	f := fetcher(t)
	f.Offline, f.Mirror = true, mirror
	res, err := f.Fetch(context.Background(), moduleFilesRequest(t, k), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Tree); !slices.Equal(got, []string{"Install-OVS.ps1"}) {
		t.Errorf("offline: %v", got)
	}
}

// The key follows the pin and the path; the origin carries them.
func TestGoModuleFilesKeyAndOrigin(t *testing.T) {
	base := artifact.GoModuleFiles{Module: antreaPath, Version: "v2.4.0", Sum: "h1:" + strings.Repeat("A", 43) + "=", Path: "hack/windows"}
	key := func(m artifact.GoModuleFiles) string {
		parts, ok, err := m.Key(nil, nil)
		if err != nil || !ok {
			t.Fatalf("key: %v, cached %v", err, ok)
		}
		return strings.Join(parts, "\x00")
	}
	k0 := key(base)
	for name, change := range map[string]func(*artifact.GoModuleFiles){
		"module":  func(m *artifact.GoModuleFiles) { m.Module = "example.com/other" },
		"version": func(m *artifact.GoModuleFiles) { m.Version = "v2.4.1" },
		"sum":     func(m *artifact.GoModuleFiles) { m.Sum = "h1:" + strings.Repeat("B", 43) + "=" },
		"path":    func(m *artifact.GoModuleFiles) { m.Path = "hack" },
		"commit":  func(m *artifact.GoModuleFiles) { m.Commit = strings.Repeat("a", 40) },
	} {
		m := base
		change(&m)
		if key(m) == k0 {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	if o := base.Origin(); o.Module != antreaPath+"@v2.4.0" || o.SHA256 != base.Sum || o.InModule != "hack/windows" {
		t.Errorf("origin %+v", o)
	}
}
