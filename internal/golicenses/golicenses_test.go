package golicenses

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func collect(t *testing.T, binary string, opt Options) (*Result, error) {
	t.Helper()
	if opt.Work == "" {
		opt.Work = filepath.Join(t.TempDir(), "work")
	}
	return Collect(context.Background(), binary, opt)
}

func modOf(t *testing.T, r *Result, path string) Module {
	t.Helper()
	for _, m := range r.Modules {
		if m.Path == path {
			return m
		}
	}
	t.Fatalf("no module %s in the result", path)
	return Module{}
}

// file returns a module's file by name, checking the copy on disk holds
// exactly want (when want is not empty).
func file(t *testing.T, m Module, name, want string) File {
	t.Helper()
	for _, f := range m.Files {
		if f.Name == name {
			got, err := os.ReadFile(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if want != "" && string(got) != want {
				t.Errorf("%s/%s: copy differs from the module's file", m.Path, name)
			}
			if f.Size != int64(len(got)) {
				t.Errorf("%s/%s: size %d, file has %d bytes", m.Path, name, f.Size, len(got))
			}
			return f
		}
	}
	t.Fatalf("module %s has no file %s (has %+v)", m.Path, name, m.Files)
	return File{}
}

// TestCollectFromModuleCache: every module of the binary is found, from
// the source tree and the module cache the build filled, its files copied
// and classified, and proven against the hashes go.sum recorded.
func TestCollectFromModuleCache(t *testing.T) {
	f := getFixture(t)
	hits := f.zipHits()
	res, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.zipHits(); got != hits {
		t.Errorf("the module cache held every module, yet %d zips were downloaded", got-hits)
	}
	var paths []string
	for _, m := range res.Modules {
		paths = append(paths, m.Path)
	}
	want := []string{"example.com/apache", "example.com/app", "example.com/bare", "example.com/brit", "example.com/custom", "example.com/local", "example.com/mit", "example.com/mpl", "example.com/old"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("modules %v, want %v", paths, want)
	}

	app := modOf(t, res, "example.com/app")
	if !app.Main || app.Source != FromSourceDir || app.Sum != "" {
		t.Errorf("main module: %+v", app)
	}
	if lf := file(t, app, "LICENSE", ""); lf.SPDX != "BSD-2-Clause" {
		t.Errorf("main LICENSE classified %q", lf.SPDX)
	}

	apache := modOf(t, res, "example.com/apache")
	if apache.Source != FromCacheZip || !apache.Pinned || apache.Sum != f.goSum(t, "example.com/apache", "v1.0.0") {
		t.Errorf("apache: source %s pinned %v sum %s", apache.Source, apache.Pinned, apache.Sum)
	}
	if lf := file(t, apache, "LICENSE", f.licence["example.com/apache"]); lf.SPDX != "Apache-2.0" || lf.Confidence < 0.9 {
		t.Errorf("apache LICENSE: %+v", lf)
	}
	if nf := file(t, apache, "NOTICE", ""); nf.SPDX != NoAssertion {
		t.Errorf("NOTICE classified %q", nf.SPDX)
	}
	if !reflect.DeepEqual(apache.Licenses, []string{"Apache-2.0"}) || apache.Missing {
		t.Errorf("apache: licences %v missing %v", apache.Licenses, apache.Missing)
	}

	mit := modOf(t, res, "example.com/mit")
	if lf := file(t, mit, "LICENSE.txt", f.licence["example.com/mit"]); lf.SPDX != "MIT" {
		t.Errorf("mit LICENSE.txt classified %q", lf.SPDX)
	}

	old := modOf(t, res, "example.com/old")
	if old.Replace == nil || *old.Replace != (Replacement{Path: "example.com/new", Version: "v1.1.0"}) || old.Sum != f.goSum(t, "example.com/new", "v1.1.0") {
		t.Errorf("replaced module: replace %+v sum %s", old.Replace, old.Sum)
	}
	if lf := file(t, old, "COPYING", f.licence["example.com/new"]); lf.SPDX != "ISC" {
		t.Errorf("COPYING of the replacement classified %q", lf.SPDX)
	}

	local := modOf(t, res, "example.com/local")
	if local.Source != FromSourceDir || local.Replace == nil || local.Replace.Path != "./local" {
		t.Errorf("directory replacement: %+v", local)
	}
	if lf := file(t, local, "LICENSE", ""); lf.SPDX != "BSD-3-Clause" {
		t.Errorf("local LICENSE classified %q", lf.SPDX)
	}

	custom := modOf(t, res, "example.com/custom")
	if lf := file(t, custom, "LICENSE", ""); lf.SPDX != NoAssertion || custom.Missing || len(custom.Licenses) != 0 {
		t.Errorf("unknown licence: file %+v, module %+v", lf, custom)
	}

	bare := modOf(t, res, "example.com/bare")
	if !bare.Missing || len(bare.Files) != 0 {
		t.Errorf("module without licence: %+v", bare)
	}
	if got := res.Missing(); !reflect.DeepEqual(got, []string{"example.com/bare@v1.0.0"}) {
		t.Errorf("Missing() = %v", got)
	}

	mpl := modOf(t, res, "example.com/mpl")
	if !reflect.DeepEqual(mpl.Licenses, []string{"MPL-2.0"}) || mpl.SourceOffer == "" {
		t.Fatalf("mpl: licences %v, source offer %q", mpl.Licenses, mpl.SourceOffer)
	}
	note, err := os.ReadFile(mpl.SourceOffer)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"MPL-2.0", "go mod download example.com/mpl@v0.3.0", mpl.Sum} {
		if !strings.Contains(string(note), w) {
			t.Errorf("source offer lacks %q:\n%s", w, note)
		}
	}
	for _, m := range res.Modules {
		if m.Path != "example.com/mpl" && m.SourceOffer != "" {
			t.Errorf("%s (%v) has a source offer", m.Path, m.Licenses)
		}
	}
}

// TestTree: the files to ship, at <module path>/<name>.
func TestTree(t *testing.T) {
	f := getFixture(t)
	res, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := res.Tree()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries() {
		if e.Kind == 0 {
			got = append(got, e.Path)
			if _, err := os.Stat(e.Source); err != nil {
				t.Errorf("%s: %v", e.Path, err)
			}
		}
	}
	want := []string{
		"example.com/apache/LICENSE", "example.com/apache/NOTICE", "example.com/app/LICENSE", "example.com/brit/LICENCE", "example.com/brit/sub/NOTICE",
		"example.com/custom/LICENSE", "example.com/local/LICENSE", "example.com/mit/LICENSE.txt",
		"example.com/mpl/LICENSE", "example.com/mpl/SOURCE-OFFER.txt", "example.com/old/COPYING",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tree %v\nwant %v", got, want)
	}
}

// TestRequireLicenses: a module without any licence file is an error
// naming it.
func TestRequireLicenses(t *testing.T) {
	f := getFixture(t)
	res, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, RequireLicenses: true})
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "example.com/bare@v1.0.0") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "example.com/custom") {
		t.Errorf("a module with an unclassified licence file is not missing: %v", err)
	}
	if res == nil || !modOf(t, res, "example.com/bare").Missing {
		t.Errorf("the result still lists what was found")
	}
}

// TestMainModuleNeedsSourceDir: a binary built from a directory names no
// version of its main module or of directory replacements; without the
// source tree they are reported missing, not guessed.
func TestMainModuleNeedsSourceDir(t *testing.T) {
	f := getFixture(t)
	res, err := collect(t, f.binary, Options{Env: f.env(f.cache)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"example.com/app", "example.com/local"} {
		if m := modOf(t, res, p); !m.Missing || m.Reason == "" || m.Source != FromNowhere {
			t.Errorf("%s without source dir: %+v", p, m)
		}
	}
	if m := modOf(t, res, "example.com/apache"); m.Missing {
		t.Errorf("apache missing: %+v", m)
	}
}

// TestSourceDirOfAnotherModule: the source dir must be the main module's.
func TestSourceDirOfAnotherModule(t *testing.T) {
	f := getFixture(t)
	_, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: filepath.Join(f.src, "local")})
	if err == nil || !strings.Contains(err.Error(), `holds module "example.com/local"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestCollectDownloads: with an empty module cache every module comes
// from the proxy, through the go command with the caller's environment,
// and is proven against the binary's hash.
func TestCollectDownloads(t *testing.T) {
	f := getFixture(t)
	cache := filepath.Join(t.TempDir(), "modcache")
	hits := f.zipHits()
	res, err := collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.zipHits() - hits; got != 7 {
		t.Errorf("%d zips downloaded, want the 7 proxy modules", got)
	}
	for _, p := range []string{"example.com/apache", "example.com/bare", "example.com/brit", "example.com/custom", "example.com/mit", "example.com/mpl", "example.com/old"} {
		if m := modOf(t, res, p); m.Source != FromProxy || !m.Pinned {
			t.Errorf("%s: source %s pinned %v", p, m.Source, m.Pinned)
		}
	}
	if lf := file(t, modOf(t, res, "example.com/apache"), "LICENSE", f.licence["example.com/apache"]); lf.SPDX != "Apache-2.0" {
		t.Errorf("apache LICENSE classified %q", lf.SPDX)
	}
	if _, err := os.Stat(cacheZip(cache, "example.com/mit", "v1.2.0")); err != nil {
		t.Errorf("downloads go to the environment's module cache: %v", err)
	}
}

// TestOffline: offline, a network proxy is refused before anything runs;
// a mirror served as a file:// proxy is used.
func TestOffline(t *testing.T) {
	f := getFixture(t)
	cache := filepath.Join(t.TempDir(), "modcache")
	_, err := collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src, Offline: true})
	if err == nil || !strings.Contains(err.Error(), "reaches the network") {
		t.Fatalf("offline with an http proxy: err = %v", err)
	}
	mirror := "file://" + filepath.ToSlash(filepath.Join(f.cache, "cache", "download"))
	hits := f.zipHits()
	res, err := collect(t, f.binary, Options{Env: f.env(cache, "GOPROXY="+mirror), SourceDir: f.src, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.zipHits() != hits {
		t.Errorf("offline collection reached the loopback proxy")
	}
	if m := modOf(t, res, "example.com/mit"); m.Source != FromProxy || m.Licenses[0] != "MIT" {
		t.Errorf("mit from the mirror: %+v", m)
	}
	// A module the mirror lacks is an error that says so.
	empty := "file://" + filepath.ToSlash(t.TempDir())
	_, err = collect(t, f.binary, Options{Env: f.env(filepath.Join(t.TempDir(), "c"), "GOPROXY="+empty), SourceDir: f.src, Offline: true})
	if err == nil || !strings.Contains(err.Error(), "offline: module example.com/apache@v1.0.0 is not in the module cache or the mirror") {
		t.Errorf("module missing from the mirror: err = %v", err)
	}
}

// fillCache downloads the fixture's modules into a fresh module cache.
func fillCache(t *testing.T, f *fixture) string {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "modcache")
	if _, err := collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src}); err != nil {
		t.Fatal(err)
	}
	return cache
}

// rezip rewrites a module zip in place with one file's content changed,
// as a tampered cache would hold: a valid zip, other files.
func rezip(t *testing.T, zipFile, name string, change func([]byte) []byte) {
	t.Helper()
	z, err := zip.OpenReader(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, zf := range z.File {
		r, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(zf.Name, "/"+name) {
			data = change(data)
		}
		fw, err := w.Create(zf.Name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(data)
	}
	z.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zipFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTamperedZipRefused: a module cache zip whose content is not what
// the binary's hash names is an error naming the module; it is not
// silently downloaded again.
func TestTamperedZipRefused(t *testing.T) {
	f := getFixture(t)
	cache := fillCache(t, f)
	zipFile := cacheZip(cache, "example.com/mit", "v1.2.0")
	rezip(t, zipFile, "LICENSE.txt", func(b []byte) []byte {
		return bytes.Replace(b, []byte("MIT License"), []byte("MIT Licence, with a twist"), 1)
	})
	hits := f.zipHits()
	_, err := collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src})
	if err == nil || !strings.Contains(err.Error(), "module example.com/mit@v1.2.0") || !strings.Contains(err.Error(), "hash mismatch") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), f.goSum(t, "example.com/mit", "v1.2.0")) {
		t.Errorf("the error gives the hash the binary records: %v", err)
	}
	if f.zipHits() != hits {
		t.Errorf("a tampered module was downloaded again")
	}
}

// TestCacheZipPreferredToDir: the extracted directory of the module cache
// may be writable (-modcacherw) and edited; the zip is what is proven and
// what the licence is read from.
func TestCacheZipPreferredToDir(t *testing.T) {
	f := getFixture(t)
	cache := fillCache(t, f)
	lic := filepath.Join(cache, "example.com", "mit@v1.2.0", "LICENSE.txt")
	if err := os.WriteFile(lic, []byte("edited in the cache\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src})
	if err != nil {
		t.Fatal(err)
	}
	m := modOf(t, res, "example.com/mit")
	if m.Source != FromCacheZip {
		t.Errorf("source %s", m.Source)
	}
	file(t, m, "LICENSE.txt", f.licence["example.com/mit"])
}

// TestCacheDirVerified: without a zip, the extracted directory is hashed
// as a whole; an edited one is refused.
func TestCacheDirVerified(t *testing.T) {
	f := getFixture(t)
	cache := fillCache(t, f)
	if err := os.Remove(cacheZip(cache, "example.com/mit", "v1.2.0")); err != nil {
		t.Fatal(err)
	}
	res, err := collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src})
	if err != nil {
		t.Fatal(err)
	}
	m := modOf(t, res, "example.com/mit")
	if m.Source != FromCacheDir {
		t.Errorf("source %s", m.Source)
	}
	file(t, m, "LICENSE.txt", f.licence["example.com/mit"])

	// A file added anywhere in the module changes its hash too.
	extra := filepath.Join(cache, "example.com", "mit@v1.2.0", "sub", "extra.go")
	if err := os.MkdirAll(filepath.Dir(extra), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(extra, []byte("package sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, f.binary, Options{Env: f.env(cache), SourceDir: f.src})
	if err == nil || !strings.Contains(err.Error(), "module example.com/mit@v1.2.0") || !strings.Contains(err.Error(), "hash mismatch") {
		t.Fatalf("err = %v", err)
	}
}

// TestVendor: a binary built from a vendor directory records no hashes;
// with its source tree, every module is read from vendor/ without the
// network or a module cache.
func TestVendor(t *testing.T) {
	f := getFixture(t)
	env := f.env(filepath.Join(t.TempDir(), "modcache"), "GOPROXY=off")
	res, err := collect(t, f.vendorBinary, Options{Env: env, SourceDir: f.vendorSrc})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Modules {
		want := FromVendor
		if m.Main {
			want = FromSourceDir
		}
		if m.Source != want || m.Pinned {
			t.Errorf("%s: source %s pinned %v, want %s", m.Path, m.Source, m.Pinned, want)
		}
	}
	// Its LICENCE was not vendored, and the module cannot be fetched.
	if m := modOf(t, res, "example.com/brit"); !m.Missing || !strings.Contains(m.Reason, "could not be fetched") {
		t.Errorf("brit without proxy: %+v", m)
	}
	if lf := file(t, modOf(t, res, "example.com/apache"), "LICENSE", f.licence["example.com/apache"]); lf.SPDX != "Apache-2.0" {
		t.Errorf("vendored apache LICENSE classified %q", lf.SPDX)
	}
	if lf := file(t, modOf(t, res, "example.com/old"), "COPYING", f.licence["example.com/new"]); lf.SPDX != "ISC" {
		t.Errorf("vendored replacement COPYING classified %q", lf.SPDX)
	}
	if m := modOf(t, res, "example.com/bare"); !m.Missing {
		t.Errorf("vendored bare module: %+v", m)
	}
}

// TestVendoredWithoutLicence: go mod vendor copies only capitalised
// LICENSE* names; a module vendored without its licence file is looked
// for in the module itself, by version.
func TestVendoredWithoutLicence(t *testing.T) {
	f := getFixture(t)
	res, err := collect(t, f.vendorBinary, Options{Env: f.env(filepath.Join(t.TempDir(), "modcache")), SourceDir: f.vendorSrc})
	if err != nil {
		t.Fatal(err)
	}
	brit := modOf(t, res, "example.com/brit")
	if brit.Source != FromProxy || brit.Pinned || brit.Missing {
		t.Errorf("brit: %+v", brit)
	}
	if lf := file(t, brit, "LICENCE", f.licence["example.com/brit"]); lf.SPDX != "MIT" {
		t.Errorf("LICENCE classified %q", lf.SPDX)
	}
	if m := modOf(t, res, "example.com/apache"); m.Source != FromVendor {
		t.Errorf("a module vendored with its licence is read from vendor/: %s", m.Source)
	}
	if m := modOf(t, res, "example.com/bare"); !m.Missing || m.Reason != "no licence file at the module root" {
		t.Errorf("bare: %+v", m)
	}
}

// TestUnpinnedFetchedByVersion: without its source tree, a vendor-built
// binary's modules are fetched by version and proven against the hash the
// go command reports; the result says they were not pinned by the binary.
func TestUnpinnedFetchedByVersion(t *testing.T) {
	f := getFixture(t)
	res, err := collect(t, f.vendorBinary, Options{Env: f.env(filepath.Join(t.TempDir(), "modcache"))})
	if err != nil {
		t.Fatal(err)
	}
	m := modOf(t, res, "example.com/apache")
	if m.Source != FromProxy || m.Pinned || m.Sum != f.goSum(t, "example.com/apache", "v1.0.0") {
		t.Errorf("apache: source %s pinned %v sum %s", m.Source, m.Pinned, m.Sum)
	}
	if m := modOf(t, res, "example.com/local"); !m.Missing {
		t.Errorf("directory replacement without source tree: %+v", m)
	}
}

// TestLimits: the caps fail with errors that say which.
func TestLimits(t *testing.T) {
	f := getFixture(t)
	_, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, MaxModules: 8})
	if err == nil || !strings.Contains(err.Error(), "links 9 modules, over the limit of 8") {
		t.Errorf("MaxModules: err = %v", err)
	}
	// The Apache licence is 11 KiB; the cap stops reading it.
	_, err = collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, MaxFileSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "licence file LICENSE of module example.com/apache@v1.0.0 is over 4096 bytes") {
		t.Errorf("MaxFileSize from a zip: err = %v", err)
	}
	_, err = collect(t, f.vendorBinary, Options{Env: f.env(f.cache), SourceDir: f.vendorSrc, MaxFileSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "example.com/apache@v1.0.0: licence file LICENSE") || !strings.Contains(err.Error(), "over 4096 bytes") {
		t.Errorf("MaxFileSize from a directory: err = %v", err)
	}
	_, err = collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, MaxFilesPerModule: 1})
	if err == nil || !strings.Contains(err.Error(), "module example.com/apache@v1.0.0 has more than 1 licence files") {
		t.Errorf("MaxFilesPerModule: err = %v", err)
	}
}

// TestDeterministic: two collections give the same result, apart from
// where the copies were written.
func TestDeterministic(t *testing.T) {
	f := getFixture(t)
	a, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, Work: filepath.Join(t.TempDir(), "a")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, Work: filepath.Join(t.TempDir(), "b")})
	if err != nil {
		t.Fatal(err)
	}
	strip := func(r *Result) *Result {
		for i := range r.Modules {
			m := &r.Modules[i]
			for j := range m.Files {
				m.Files[j].Path = filepath.Base(m.Files[j].Path)
			}
			m.SourceOffer = filepath.Base(m.SourceOffer)
		}
		return r
	}
	if !reflect.DeepEqual(strip(a), strip(b)) {
		t.Errorf("results differ:\n%+v\n%+v", a, b)
	}
}

// TestWorkMustBeEmpty: Collect writes only where it owns the directory.
func TestWorkMustBeEmpty(t *testing.T) {
	f := getFixture(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src, Work: work})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("err = %v", err)
	}
}

// TestNotAGoBinary: a file without Go build info is an error that says so.
func TestNotAGoBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := collect(t, p, Options{})
	if err == nil || !strings.Contains(err.Error(), "reading the Go build info of "+p) {
		t.Errorf("err = %v", err)
	}
}

// TestHugeLicenceFileBounded: a 1 GiB licence file (sparse: it costs no
// disk) is refused after reading at most the cap, in bounded memory.
func TestHugeLicenceFileBounded(t *testing.T) {
	f := getFixture(t)
	src := t.TempDir()
	if err := copyFile(filepath.Join(f.src, "go.mod"), filepath.Join(src, "go.mod")); err != nil {
		t.Fatal(err)
	}
	lic, err := os.Create(filepath.Join(src, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lic.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	lic.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: src})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "module example.com/app@(devel): licence file LICENSE") || !strings.Contains(err.Error(), "over 1048576 bytes (MaxFileSize)") {
		t.Fatalf("err = %v", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB", alloc>>10)
	if alloc > 32<<20 {
		t.Errorf("allocated %d MiB reading past a 1 MiB cap", alloc>>20)
	}
}

// TestMainModuleStampedWithTag: a release binary built from a tagged
// checkout names its main module's version but records no hash; without
// its source it is fetched by that version if the proxy has it, and
// reported missing, not failed, if not.
func TestMainModuleStampedWithTag(t *testing.T) {
	f := getFixture(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	src := filepath.Join(t.TempDir(), "tagged")
	if err := f.writeMain(src); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(f.src, "go.sum"), filepath.Join(src, "go.sum")); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "release")
	git("tag", "v1.5.0")
	bin := filepath.Join(t.TempDir(), "tagged-app")
	if out, err := f.goCmd(src, f.env(f.cache, "GOFLAGS=-mod=mod -modcacherw -buildvcs=true"), "build", "-o", bin, "."); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if info.Main.Version != "v1.5.0" || info.Main.Sum != "" {
		t.Fatalf("main module stamped %q sum %q, want v1.5.0 without sum", info.Main.Version, info.Main.Sum)
	}

	res, err := collect(t, bin, Options{Env: f.env(f.cache)})
	if err != nil {
		t.Fatal(err)
	}
	if m := modOf(t, res, "example.com/app"); !m.Missing || !strings.Contains(m.Reason, "could not be fetched") {
		t.Errorf("main module the proxy lacks: %+v", m)
	}

	if err := f.serveDir("example.com/app", "v1.5.0", src); err != nil {
		t.Fatal(err)
	}
	res, err = collect(t, bin, Options{Env: f.env(f.cache)})
	if err != nil {
		t.Fatal(err)
	}
	m := modOf(t, res, "example.com/app")
	if m.Source != FromProxy || m.Pinned || m.Missing || !strings.HasPrefix(m.Sum, "h1:") {
		t.Errorf("main module from the proxy: %+v", m)
	}
	if lf := file(t, m, "LICENSE", corpus("BSD-2-Clause")); lf.SPDX != "BSD-2-Clause" {
		t.Errorf("main LICENSE classified %q", lf.SPDX)
	}
}

// TestNestedLicences: a licence or notice in a directory that holds
// packages (or has them below) is kept, at its path in the module; one
// under testdata, a directory the go command ignores, or among data files
// (a classifier's corpus of licence texts) is not.
func TestNestedLicences(t *testing.T) {
	f := getFixture(t)
	for _, c := range []struct {
		name string
		opt  Options
	}{
		{"module cache zip", Options{Env: f.env(f.cache), SourceDir: f.src}},
		{"proxy", Options{Env: f.env(filepath.Join(t.TempDir(), "modcache")), SourceDir: f.src}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := collect(t, f.binary, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			brit := modOf(t, res, "example.com/brit")
			var names []string
			for _, lf := range brit.Files {
				names = append(names, lf.Name)
			}
			if want := []string{"LICENCE", "sub/NOTICE"}; !reflect.DeepEqual(names, want) {
				t.Errorf("brit files %v, want %v", names, want)
			}
			file(t, brit, "sub/NOTICE", "The sub package includes code by the Sub Authors.\n")
			if slices.Contains(brit.Licenses, "GPL-2.0") {
				t.Errorf("a testdata licence was classified as the module's: %v", brit.Licenses)
			}
		})
	}
	// A module read from a directory: the same rules, and a nested module
	// (its own go.mod) is left to itself.
	dir := t.TempDir()
	if err := writeFiles(dir, map[string]string{
		"LICENSE":                corpus("MIT"),
		"fork/LICENSE":           corpus("Apache-2.0"),
		"fork/NOTICE.md":         "Fork notice.\n",
		"fork/fork.go":           "package fork\n",
		"assets/MIT/license.txt": corpus("MIT"),
		"assets/assets.go":       "package assets\n",
		"testdata/LICENSE":       corpus("GPL-2.0"),
		".hidden/LICENSE":        corpus("GPL-2.0"),
		"inner/go.mod":           "module example.com/x/inner\n",
		"inner/LICENSE":          corpus("GPL-2.0"),
		"deep/er/COPYING.txt":    corpus("ISC"),
		"deep/er/not-a-lic.go":   "package er\n",
	}); err != nil {
		t.Fatal(err)
	}
	files, err := readDirLicenses(dir, "example.com/x", Options{}.withDefaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(files))
	if want := []string{"LICENSE", "deep/er/COPYING.txt", "fork/LICENSE", "fork/NOTICE.md"}; !reflect.DeepEqual(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	if (licenseFiles{"x/NOTICE": nil}).hasLicence() || !(licenseFiles{"x/NOTICE": nil, "COPYING": nil}).hasLicence() {
		t.Error("a NOTICE alone is not a licence")
	}
}

// TestRemember: with Options.Remember, a text seen before is classified
// from what was kept, the same as the classifier says, without it.
func TestRemember(t *testing.T) {
	f := getFixture(t)
	kept := map[string]string{}
	derived := 0
	remember := func(sum string, text []byte, derive func() (string, error)) (string, error) {
		if v, ok := kept[sum]; ok {
			return v, nil
		}
		derived++
		v, err := derive()
		kept[sum] = v
		return v, err
	}
	opt := func() Options {
		return Options{Env: f.env(f.cache), SourceDir: f.src, Remember: remember}
	}
	first, err := collect(t, f.binary, opt())
	if err != nil {
		t.Fatal(err)
	}
	if derived == 0 {
		t.Fatal("nothing was classified")
	}
	n := derived
	second, err := collect(t, f.binary, opt())
	if err != nil {
		t.Fatal(err)
	}
	if derived != n {
		t.Errorf("%d texts classified again", derived-n)
	}
	plain, err := collect(t, f.binary, Options{Env: f.env(f.cache), SourceDir: f.src})
	if err != nil {
		t.Fatal(err)
	}
	for i := range plain.Modules {
		for j := range plain.Modules[i].Files {
			p, a, b := plain.Modules[i].Files[j], first.Modules[i].Files[j], second.Modules[i].Files[j]
			if p.SPDX != a.SPDX || p.SPDX != b.SPDX || p.Confidence != b.Confidence {
				t.Errorf("%s/%s: %s %v, remembered %s %v", plain.Modules[i].Path, p.Name, p.SPDX, p.Confidence, b.SPDX, b.Confidence)
			}
		}
		if !reflect.DeepEqual(plain.Modules[i].Licenses, second.Modules[i].Licenses) {
			t.Errorf("%s: licences %v, remembered %v", plain.Modules[i].Path, plain.Modules[i].Licenses, second.Modules[i].Licenses)
		}
	}
}

// TestRememberedHash: a zip whose hash is remembered is not hashed again;
// its licence files are still read from it, the same bytes as when it was
// hashed. A remembered hash that is not the binary's is a mismatch, not a
// pass: what is remembered is the zip's hash, the pin is still checked.
func TestRememberedHash(t *testing.T) {
	f := getFixture(t)
	cache := fillCache(t, f)
	kept := map[string]string{}
	var hashed int
	var mu sync.Mutex // called for several zips at once
	remember := func(path, fact string, hash func() (string, error)) (string, error) {
		mu.Lock()
		v, ok := kept[path+" "+fact]
		mu.Unlock()
		if ok {
			return v, nil
		}
		v, err := hash()
		mu.Lock()
		defer mu.Unlock()
		hashed++
		if err == nil {
			kept[path+" "+fact] = v
		}
		return v, err
	}
	opt := Options{Env: f.env(cache), SourceDir: f.src, RememberHash: remember}
	first, err := collect(t, f.binary, opt)
	if err != nil {
		t.Fatal(err)
	}
	if hashed == 0 {
		t.Fatal("no zip was hashed through RememberHash")
	}
	n := hashed
	again, err := collect(t, f.binary, opt)
	if err != nil {
		t.Fatal(err)
	}
	if hashed != n {
		t.Errorf("%d zips hashed again although their hashes were remembered", hashed-n)
	}
	sameModules(t, again, first, "remembered", "hashed")

	zipFile := cacheZip(cache, "example.com/mit", "v1.2.0")
	for k := range kept {
		if strings.HasPrefix(k, zipFile+" ") {
			kept[k] = "h1:" + strings.Repeat("A", 43) + "="
		}
	}
	_, err = collect(t, f.binary, opt)
	if err == nil || !strings.Contains(err.Error(), "module example.com/mit@v1.2.0") || !strings.Contains(err.Error(), "hash mismatch") {
		t.Errorf("a remembered hash other than the binary's: err = %v", err)
	}
}

// sameModules fails unless got holds each module of want with as many
// files, each of the same content as want's, the same sum and the same
// licences; gotHow and wantHow say how each came to be.
func sameModules(t *testing.T, got, want *Result, gotHow, wantHow string) {
	t.Helper()
	for _, m := range want.Modules {
		m2 := modOf(t, got, m.Path)
		if len(m2.Files) != len(m.Files) || m2.Sum != m.Sum || !slices.Equal(m2.Licenses, m.Licenses) {
			t.Errorf("%s: %s %+v, %s %+v", m.Path, gotHow, m2, wantHow, m)
			continue
		}
		for _, fl := range m.Files {
			content, err := os.ReadFile(fl.Path)
			if err != nil {
				t.Fatal(err)
			}
			file(t, m2, fl.Name, string(content))
		}
	}
}

// TestSharedZip: with Options.ShareZip, a module zip one call proved and
// read is not opened again by the next (another platform's binary of the
// same modules): the same files come back. A zip changed since (its
// stamp) is proven again.
func TestSharedZip(t *testing.T) {
	f := getFixture(t)
	cache := fillCache(t, f)
	var mu sync.Mutex // called for several zips at once
	var opened []string
	remember := func(path, _ string, hash func() (string, error)) (string, error) {
		mu.Lock()
		opened = append(opened, path)
		mu.Unlock()
		return hash()
	}
	shared := map[string]*sync.Once{}
	values := map[string]map[string][]byte{}
	errs := map[string]error{}
	share := func(key string, read func() (map[string][]byte, error)) (map[string][]byte, error) {
		mu.Lock()
		once, ok := shared[key]
		if !ok {
			once = &sync.Once{}
			shared[key] = once
		}
		mu.Unlock()
		once.Do(func() {
			v, err := read()
			mu.Lock()
			values[key], errs[key] = v, err
			mu.Unlock()
		})
		mu.Lock()
		defer mu.Unlock()
		return values[key], errs[key]
	}
	opt := Options{Env: f.env(cache), SourceDir: f.src, RememberHash: remember, ShareZip: share}
	first, err := collect(t, f.binary, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(opened) == 0 {
		t.Fatal("no zip was read")
	}
	n := len(opened)
	again, err := collect(t, f.binary, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(opened) != n {
		t.Errorf("zips read again for a second binary of the same modules: %v", opened[n:])
	}
	sameModules(t, again, first, "shared", "read")
	zipFile := cacheZip(cache, "example.com/mit", "v1.2.0")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(zipFile, later, later); err != nil {
		t.Fatal(err)
	}
	n = len(opened)
	if _, err := collect(t, f.binary, opt); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opened[n:], []string{zipFile}) {
		t.Errorf("after %s changed, read again %v, want it alone", zipFile, opened[n:])
	}
}

// TestSameTextStoredOnce: modules shipping the same licence text share
// one copy under the work directory; each is still its own file in the
// tree, under its module's path.
func TestSameTextStoredOnce(t *testing.T) {
	c := &collector{out: filepath.Join(t.TempDir(), "files"), stored: map[string]bool{}}
	text := []byte(corpus("Apache-2.0"))
	var res Result
	for _, p := range []string{"example.com/a", "example.org/b/v2"} {
		f, err := c.writeFile(modRef{Path: p}, "LICENSE", text, classification{spdx: "Apache-2.0"})
		if err != nil {
			t.Fatal(err)
		}
		res.Modules = append(res.Modules, Module{Path: p, Files: []File{f.File}})
	}
	if a, b := res.Modules[0].Files[0].Path, res.Modules[1].Files[0].Path; a != b {
		t.Errorf("one text, two copies: %s, %s", a, b)
	}
	entries, err := os.ReadDir(c.out)
	if err != nil || len(entries) != 1 {
		t.Errorf("work directory holds %v (%v), want one file", entries, err)
	}
	tr, err := res.Tree()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"example.com/a/LICENSE", "example.org/b/v2/LICENSE"} {
		e, ok := tr.Get(p)
		if !ok {
			t.Fatalf("tree has no %s", p)
		}
		if got, err := os.ReadFile(e.Source); err != nil || !bytes.Equal(got, text) || e.Size != int64(len(text)) {
			t.Errorf("%s: %d bytes from %s (%v), want the text", p, e.Size, e.Source, err)
		}
	}
}

// TestOutsideModuleMode: the Go distribution's own commands and binaries
// built outside module mode have no module to read: no error, no
// modules, and only the latter are said to link what is not known.
func TestOutsideModuleMode(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	asm := filepath.Join(strings.TrimSpace(string(goroot)), "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "asm")
	if _, err := os.Stat(asm); err != nil {
		t.Skipf("no toolchain command to read: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gopath := filepath.Join(dir, "gopath-hello")
	cmd := exec.Command("go", "build", "-o", gopath, "hello.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "GOPATH="+filepath.Join(dir, "gopath"), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOPATH-mode build: %v\n%s", err, out)
	}
	for bin, outside := range map[string]bool{asm: false, gopath: true} {
		res, err := collect(t, bin, Options{})
		if err != nil {
			t.Errorf("%s: %v", bin, err)
			continue
		}
		if len(res.Modules) != 0 || res.OutsideModules() != outside {
			t.Errorf("%s (package %s): %d modules, outside module mode %v; want none, %v", bin, res.Package, len(res.Modules), res.OutsideModules(), outside)
		}
	}
}
