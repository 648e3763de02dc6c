package artifact_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/note"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/modhash"
)

// toolchainProxy is a module cache's file proxy as the go command leaves
// it after switching to toolchains online: their zips, and the checksum
// database's records and tiles it verified them by.
type toolchainProxy struct {
	dir    string // the proxy: <GOMODCACHE>/cache/download
	vkey   string // the checksum database's verifier key (GOSUMDB)
	name   string // its name
	zips   map[string][]byte
	server *sumdb.Server
}

func toolchainVersion(goVersion string) string {
	return "v0.0.1-" + goVersion + "." + runtime.GOOS + "-" + runtime.GOARCH
}

// newToolchainProxy serves toolchain zips of the releases goVersions, each
// with a go that says which it is, from a checksum database of its own.
func newToolchainProxy(t *testing.T, goVersions ...string) *toolchainProxy {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "sum.test")
	if err != nil {
		t.Fatal(err)
	}
	p := &toolchainProxy{dir: filepath.Join(t.TempDir(), "cache", "download"), vkey: vkey, name: "sum.test", zips: map[string][]byte{}}
	for _, gv := range goVersions {
		p.zips[toolchainVersion(gv)] = toolchainZip(t, gv, "#!/bin/sh\necho "+gv+"\n")
	}
	gosum := func(path, vers string) ([]byte, error) {
		data, ok := p.zips[vers]
		if path != "golang.org/toolchain" || !ok {
			return nil, fmt.Errorf("no %s@%s", path, vers)
		}
		f := filepath.Join(t.TempDir(), "z.zip")
		if err := os.WriteFile(f, data, 0o644); err != nil {
			return nil, err
		}
		h, err := modhash.Zip(f)
		if err != nil {
			return nil, err
		}
		mod, err := modhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("module golang.org/toolchain\n")), nil
		})
		if err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod %s\n", path, vers, h, path, vers, mod), nil
	}
	p.server = sumdb.NewServer(sumdb.NewTestServer(skey, gosum))
	return p
}

// fetch puts the toolchain of goVersion in the proxy as the go command
// does when it switches to it online: the zip alone, and what it read of
// the checksum database to verify it.
func (p *toolchainProxy) fetch(t *testing.T, goVersion string) {
	t.Helper()
	v := toolchainVersion(goVersion)
	at := filepath.Join(p.dir, "golang.org", "toolchain", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, v+".zip"), p.zips[v], 0o644); err != nil {
		t.Fatal(err)
	}
	c := sumdb.NewClient(&goCacheOps{p: p, t: t, config: map[string][]byte{}})
	if _, err := c.Lookup("golang.org/toolchain", v); err != nil {
		t.Fatal(err)
	}
}

// goCacheOps is a sumdb client's view as the go command's: the server,
// and its cache written to <GOMODCACHE>/cache/download/sumdb.
type goCacheOps struct {
	p      *toolchainProxy
	t      *testing.T
	config map[string][]byte
}

func (o *goCacheOps) ReadRemote(path string) ([]byte, error) {
	rec := httptest.NewRecorder()
	o.p.server.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != 200 {
		return nil, fmt.Errorf("%s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes(), nil
}

func (o *goCacheOps) ReadConfig(file string) ([]byte, error) {
	if file == "key" {
		return []byte(o.p.vkey), nil
	}
	return o.config[file], nil
}

func (o *goCacheOps) WriteConfig(file string, old, new []byte) error {
	o.config[file] = new
	return nil
}

func (o *goCacheOps) ReadCache(file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(o.p.dir, "sumdb", file))
}

func (o *goCacheOps) WriteCache(file string, data []byte) {
	f := filepath.Join(o.p.dir, "sumdb", file)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		o.t.Error(err)
	}
	if err := os.WriteFile(f, data, 0o644); err != nil {
		o.t.Error(err)
	}
}

func (o *goCacheOps) Log(string)             {}
func (o *goCacheOps) SecurityError(m string) { o.t.Error(m) }

// toolchainZip is a toolchain module zip whose bin/go is script.
func toolchainZip(t *testing.T, goVersion, script string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	prefix := "golang.org/toolchain@" + toolchainVersion(goVersion) + "/"
	// pkg/tool, lib and bin/gofmt: the go command switching to it makes
	// their files executable, and fails without them.
	for name, data := range map[string]string{"bin/go": script, "bin/gofmt": "#!/bin/sh\n", "VERSION": goVersion + "\n", "pkg/tool/README": "tools\n", "lib/README": "lib\n"} {
		f, err := w.Create(prefix + name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// offlineEnv is the environment of an offline build of a module pinned to
// goVersion, its toolchain served by proxy, into the module cache modcache.
func offlineEnv(goVersion, proxy, modcache string) []string {
	return append(os.Environ(), "GOTOOLCHAIN="+goVersion, "GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off", "GOMODCACHE="+modcache, "GOFLAGS=-modcacherw")
}

// An offline build's pinned toolchain is verified from the checksum
// database's data in the proxy it comes from before any go command runs
// with it, and unpacked into the module cache from the bytes verified.
func TestVerifyGoToolchain(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	const gv = "go1.99.1"
	v := toolchainVersion(gv)
	zipOf := func(p *toolchainProxy) string {
		return filepath.Join(p.dir, "golang.org", "toolchain", "@v", v+".zip")
	}
	lookupOf := func(p *toolchainProxy, vers string) string {
		return filepath.Join(p.dir, "sumdb", p.name, "lookup", "golang.org", "toolchain@"+vers)
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p *toolchainProxy)
		want   []string // in the error; none: verified
		refuse []string // not in the error
	}{
		{name: "good"},
		{
			// The go command verified go1.99.1, then go1.99.0 against a
			// larger tree, and cached only the tiles of that tree.
			name: "tiles of a later tree",
			change: func(t *testing.T, p *toolchainProxy) {
				p.fetch(t, "go1.99.0")
				tiles := filepath.Join(p.dir, "sumdb", p.name, "tile")
				filepath.WalkDir(tiles, func(path string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() && filepath.Base(path) == "1" && strings.HasSuffix(filepath.Dir(path), ".p") {
						os.Remove(path)
					}
					return nil
				})
			},
		},
		{
			name: "zip replaced",
			change: func(t *testing.T, p *toolchainProxy) {
				if err := os.WriteFile(zipOf(p), toolchainZip(t, gv, "#!/bin/sh\necho evil\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"{zip} has h1:", "the checksum database says h1:"},
		},
		{
			name: "lookup missing",
			change: func(t *testing.T, p *toolchainProxy) {
				if err := os.Remove(lookupOf(p, v)); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"golang.org/toolchain@" + v, "no record of it from checksum database sum.test", "fetch the mirror again"},
		},
		{
			name: "lookup of another version",
			change: func(t *testing.T, p *toolchainProxy) {
				p.fetch(t, "go1.99.0")
				data, err := os.ReadFile(lookupOf(p, toolchainVersion("go1.99.0")))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(lookupOf(p, v), data, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"golang.org/toolchain@" + v, "does not hold its hashes"},
		},
		{
			name: "another database",
			change: func(t *testing.T, p *toolchainProxy) {
				_, other, err := note.GenerateKey(rand.Reader, "sum.test")
				if err != nil {
					t.Fatal(err)
				}
				t.Setenv("GOSUMDB", other)
			},
			want:   []string{"golang.org/toolchain@" + v, "is not signed by the key GOSUMDB gives it", "another checksum database, or was altered"},
			refuse: []string{"fetch the mirror again"},
		},
		{
			// A note whose signature is not the key's: one byte of the
			// signed tree head changed.
			name: "tree head altered",
			change: func(t *testing.T, p *toolchainProxy) {
				data, err := os.ReadFile(lookupOf(p, v))
				if err != nil {
					t.Fatal(err)
				}
				i := bytes.Index(data, []byte("\n\ngo.sum database tree\n"))
				if i < 0 {
					t.Fatalf("no tree head in %q", data)
				}
				i += len("\n\ngo.sum database tree\n")
				data[i] ^= 1 // the tree size's first digit
				if err := os.WriteFile(lookupOf(p, v), data, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want:   []string{"golang.org/toolchain@" + v, "is not signed by the key GOSUMDB gives it", "invalid signature"},
			refuse: []string{"fetch the mirror again"},
		},
		{
			name:   "GOSUMDB off",
			change: func(t *testing.T, p *toolchainProxy) { t.Setenv("GOSUMDB", "off") },
			want:   []string{"golang.org/toolchain@" + v, "GOSUMDB=off: nothing can verify the pinned toolchain"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newToolchainProxy(t, gv, "go1.99.0")
			p.fetch(t, gv)
			t.Setenv("GOSUMDB", p.vkey)
			if tc.change != nil {
				tc.change(t, p)
			}
			modcache := t.TempDir()
			_, err := artifact.VerifyGoToolchain(context.Background(), t.TempDir(), offlineEnv(gv, p.dir, modcache))
			unpacked := filepath.Join(modcache, "golang.org", "toolchain@"+v, "bin", "go")
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(unpacked)
				if err != nil || !strings.Contains(string(data), "echo "+gv) {
					t.Errorf("the toolchain unpacked in the module cache: %q, %v", data, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("verified; want an error saying %q", tc.want)
			}
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "{zip}", zipOf(p))
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			for _, w := range tc.refuse {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nsays %q", err, w)
				}
			}
			if _, err := os.Stat(unpacked); err == nil {
				t.Errorf("refused, but unpacked into the module cache")
			}
		})
	}
}

// A toolchain already unpacked in the build's module cache is what the go
// command runs: it is the one proven, whatever the proxy holds.
func TestVerifyGoToolchainUnpacked(t *testing.T) {
	const gv = "go1.99.1"
	v := toolchainVersion(gv)
	p := newToolchainProxy(t, gv)
	p.fetch(t, gv)
	t.Setenv("GOSUMDB", p.vkey)
	modcache := t.TempDir()
	if _, err := artifact.VerifyGoToolchain(context.Background(), t.TempDir(), offlineEnv(gv, p.dir, modcache)); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(modcache, "golang.org", "toolchain@"+v, "bin", "go")
	if err := os.WriteFile(goBin, []byte("#!/bin/sh\necho evil\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Another proxy dir: a check not yet made in this process.
	other := filepath.Join(t.TempDir(), "cache", "download")
	if err := os.CopyFS(other, os.DirFS(p.dir)); err != nil {
		t.Fatal(err)
	}
	_, err := artifact.VerifyGoToolchain(context.Background(), t.TempDir(), offlineEnv(gv, other, modcache))
	dir := filepath.Dir(filepath.Dir(goBin))
	if err == nil || !strings.Contains(err.Error(), dir+" has h1:") {
		t.Errorf("a toolchain changed in the module cache: want a refusal naming %s, got %v", dir, err)
	}
}

// pallet fetch with the user's GOPROXY a single file:// proxy and
// GOSUMDB=off, where the go command checks no toolchain it switches to,
// refuses a pinned one rather than run it unchecked.
func TestMirrorUnverifiableToolchain(t *testing.T) {
	const gv = "go1.99.1"
	ran := filepath.Join(t.TempDir(), "ran")
	p := newToolchainProxy(t)
	p.zips[toolchainVersion(gv)] = toolchainZip(t, gv, "#!/bin/sh\necho >"+ran+"\n")
	p.fetch(t, gv)
	mod := t.TempDir()
	for name, data := range map[string]string{"go.mod": "module example.com/x\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(p.dir))
	t.Setenv("GOSUMDB", "off")
	g := &artifact.Go{Module: mod, Packages: []string{"."}, Version: "1.99.1"}
	req := &artifact.Request{Name: "x", Platform: hostPlatform(t), Kind: g}
	err := g.Mirror(context.Background(), fetcher(t), req, t.TempDir())
	if _, statErr := os.Stat(ran); statErr == nil {
		t.Errorf("pallet fetch ran the go of a toolchain nothing checked (%v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "GOSUMDB=off: nothing can verify the pinned toolchain") {
		t.Errorf("want a refusal saying GOSUMDB=off, got %v", err)
	}
}

// The go command unpacks the toolchain zip its module cache holds, when
// it holds one, rather than the proxy's: a wrong one there is refused,
// naming it, and nothing is unpacked.
func TestVerifyGoToolchainCachedZip(t *testing.T) {
	const gv = "go1.99.1"
	v := toolchainVersion(gv)
	p := newToolchainProxy(t, gv)
	p.fetch(t, gv)
	t.Setenv("GOSUMDB", p.vkey)
	modcache := t.TempDir()
	cached := filepath.Join(modcache, "cache", "download", "golang.org", "toolchain", "@v", v+".zip")
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, toolchainZip(t, gv, "#!/bin/sh\necho evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := artifact.VerifyGoToolchain(context.Background(), t.TempDir(), offlineEnv(gv, p.dir, modcache))
	if err == nil || !strings.Contains(err.Error(), cached+" has h1:") {
		t.Errorf("a wrong toolchain zip in the module cache: want a refusal naming %s, got %v", cached, err)
	}
	if _, err := os.Stat(filepath.Join(modcache, "golang.org", "toolchain@"+v)); err == nil {
		t.Errorf("refused, but unpacked into the module cache")
	}
}

// A toolchain zip in the module cache over the bound a toolchain's may
// be is refused saying so, before it is hashed: hashing reads it whole.
// Sparse: it takes no room on disk.
func TestVerifyGoToolchainCachedZipTooLarge(t *testing.T) {
	const gv = "go1.99.1"
	v := toolchainVersion(gv)
	p := newToolchainProxy(t, gv)
	p.fetch(t, gv)
	t.Setenv("GOSUMDB", p.vkey)
	modcache := t.TempDir()
	cached := filepath.Join(modcache, "cache", "download", "golang.org", "toolchain", "@v", v+".zip")
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, p.zips[v], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cached, 1<<30+1); err != nil {
		t.Skipf("no sparse file: %v", err)
	}
	_, err := artifact.VerifyGoToolchain(context.Background(), t.TempDir(), offlineEnv(gv, p.dir, modcache))
	if err == nil || !strings.Contains(err.Error(), cached+" is 1073741825 bytes, over the 1073741824") {
		t.Errorf("want %s refused as over the bound, got %v", cached, err)
	}
	if _, err := os.Stat(filepath.Join(modcache, "golang.org", "toolchain@"+v)); err == nil {
		t.Errorf("refused, but unpacked into the module cache")
	}
}

// autoEnv is offlineEnv with GOTOOLCHAIN=gotoolchain, or, for "", none:
// the go command's default, from the go env -w file goenv.
func autoEnv(gotoolchain, proxy, modcache, goenv string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOTOOLCHAIN=") && !strings.HasPrefix(kv, "GOENV=") && !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off", "GOMODCACHE="+modcache, "GOFLAGS=-modcacherw", "GOENV="+goenv)
	if gotoolchain != "" {
		env = append(env, "GOTOOLCHAIN="+gotoolchain)
	}
	return env
}

// Offline, a go command let switch toolchains by itself (GOTOOLCHAIN
// auto, the default, goX+auto) switches to the one the main module's
// go.mod or go.work asks for when it is newer: that toolchain is proven
// before any go command runs in the module, and one whose zip was
// replaced is refused before anything of it runs.
func TestVerifyGoToolchainAuto(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	for _, tc := range []struct {
		name, gotoolchain, goenv string
		files                    map[string]string // the module's, in its parent dir
		want                     string            // the toolchain switched to
	}{
		{name: "go line", gotoolchain: "auto", files: map[string]string{"m/go.mod": "module example.com/m\n\ngo 1.99.1\n"}, want: "go1.99.1"},
		{name: "toolchain line", gotoolchain: "auto", files: map[string]string{"m/go.mod": "module example.com/m\n\ngo 1.22\n\ntoolchain go1.99.1 // newer\n"}, want: "go1.99.1"},
		{name: "go line without its patch", gotoolchain: "auto", files: map[string]string{"m/go.mod": "module example.com/m\n\ngo 1.99\n"}, want: "go1.99.0"},
		{name: "go line over the toolchain line", gotoolchain: "auto", files: map[string]string{"m/go.mod": "module example.com/m\n\ngo 1.99.1\n\ntoolchain go1.99.0\n"}, want: "go1.99.1"},
		{name: "go.work", gotoolchain: "go1.22.0+auto", files: map[string]string{"go.work": "go 1.99.1\n\nuse ./m\n", "m/go.mod": "module example.com/m\n\ngo 1.22\n"}, want: "go1.99.1"},
		{name: "the default from go env -w", goenv: "GOTOOLCHAIN=auto\n", files: map[string]string{"m/go.mod": "module example.com/m\n\ngo 1.99.1\n"}, want: "go1.99.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newToolchainProxy(t, "go1.99.0", "go1.99.1")
			p.fetch(t, "go1.99.0")
			p.fetch(t, "go1.99.1")
			t.Setenv("GOSUMDB", p.vkey)
			root := t.TempDir()
			for name, data := range tc.files {
				f := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			goenv := filepath.Join(t.TempDir(), "env")
			if err := os.WriteFile(goenv, []byte(tc.goenv), 0o644); err != nil {
				t.Fatal(err)
			}
			mod := filepath.Join(root, "m")

			// Untouched: the go command runs the toolchain proven.
			modcache := t.TempDir()
			v, err := artifact.AskGoEnv(context.Background(), mod, autoEnv(tc.gotoolchain, p.dir, modcache, goenv), "GOVERSION")
			if err != nil {
				t.Fatal(err)
			}
			if v[0] != tc.want {
				t.Errorf("go env GOVERSION in the module: %q, want %q", v[0], tc.want)
			}

			// Replaced in the proxy: refused before it runs.
			ran := filepath.Join(t.TempDir(), "ran")
			zipFile := filepath.Join(p.dir, "golang.org", "toolchain", "@v", toolchainVersion(tc.want)+".zip")
			if err := os.WriteFile(zipFile, toolchainZip(t, tc.want, "#!/bin/sh\necho >"+ran+"\necho "+tc.want+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			modcache = t.TempDir()
			_, err = artifact.AskGoEnv(context.Background(), mod, autoEnv(tc.gotoolchain, p.dir, modcache, goenv), "GOVERSION")
			if _, statErr := os.Stat(ran); statErr == nil {
				t.Errorf("the go command ran a toolchain replaced in the proxy (%v)", err)
			}
			if err == nil || !strings.Contains(err.Error(), zipFile+" has h1:") {
				t.Errorf("want a refusal naming %s, got %v", zipFile, err)
			}
		})
	}
}

// Which GOTOOLCHAIN forms have a toolchain come from the proxy, and so
// proven (here refused: the proxy holds no record), and which take it from
// PATH or the go command on PATH, or are refused by the go command itself,
// and pass unchanged.
func TestVerifyGoToolchainForms(t *testing.T) {
	p := newToolchainProxy(t)
	t.Setenv("GOSUMDB", p.vkey)
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.99.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gotoolchain string
		proven      string // the toolchain refused for want of a record; "": passes
	}{
		{"go1.99.1", "go1.99.1"},
		{"go1.99.1+auto", "go1.99.2"},
		{"local+auto", "go1.99.2"},
		{"auto", "go1.99.2"},
		{"go1.99rc1", "go1.99rc1"},
		{"go1.99.1+path", ""},
		{"path", ""},
		{"local", ""},
		{"go1.99.1+bogus", ""},
		{"bash", ""},
	} {
		t.Run(tc.gotoolchain, func(t *testing.T) {
			env := autoEnv(tc.gotoolchain, p.dir, t.TempDir(), os.DevNull)
			got, err := artifact.VerifyGoToolchain(context.Background(), mod, env)
			if tc.proven == "" {
				if err != nil {
					t.Fatalf("GOTOOLCHAIN=%s: %v", tc.gotoolchain, err)
				}
				if !slices.Equal(got, env) {
					t.Errorf("GOTOOLCHAIN=%s: environment changed to %q", tc.gotoolchain, got[len(env):])
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "golang.org/toolchain@"+toolchainVersion(tc.proven)+": no record of it") {
				t.Errorf("GOTOOLCHAIN=%s: want %s refused for want of a record, got %v", tc.gotoolchain, tc.proven, err)
			}
		})
	}
}
