package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/record"
)

// kindEnv is the kind-base example with its stand-in upstream: git
// repositories, a release server, and a Debian-like base layout.
type kindEnv struct {
	dir, recipe string
	srv         *fixture.Server
	commits     map[string]string
}

func newKindEnv(t *testing.T) *kindEnv {
	t.Helper()
	needTool(t, "git")
	needTool(t, "gcc") // runc's source mode builds with cgo
	e := &kindEnv{dir: t.TempDir(), recipe: copyExample(t, "kind-base")}
	var err error
	if e.commits, err = fixture.WriteKindRepos(filepath.Join(e.dir, "git"), filepath.Join(filepath.Dir(e.recipe), "modules")); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteDebianBase(filepath.Join(e.dir, "base")); err != nil {
		t.Fatal(err)
	}
	e.srv = fixture.Serve(t, fixture.KindReleases())
	return e
}

// build runs pallet build on the example with the stand-in upstream and
// returns the output layout and the record.
func (e *kindEnv) build(t *testing.T, extra ...string) (string, *record.Build) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, append(e.args(out), extra...)...)
	return out, readRecord(t, out+".record.json")
}

func (e *kindEnv) args(out string) []string {
	return []string{"build", "-q", "-f", e.recipe, "-o", "oci:" + out,
		"--arg", "GIT=file://" + filepath.Join(e.dir, "git"),
		"--arg", "RELEASES=" + e.srv.URL,
		"--arg", "BASE=oci:" + filepath.Join(e.dir, "base") + ":bookworm"}
}

func readRecord(t *testing.T, path string) *record.Build {
	t.Helper()
	var b record.Build
	readJSON(t, path, &b)
	return &b
}

// localInputs writes what a user would hand to the local mode: a patched
// containerd tarball, a runc binary, a crictl binary and a CNI directory.
func localInputs(t *testing.T, arch string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	m := fixture.KindArchs[arch]
	bin := func(n string) string { return string(fixture.ELF(m, "patched "+n+"\n")) }
	write := func(p string, b []byte) string {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return full
	}
	write0644 := func(p string, b []byte) string {
		full := write(p, b)
		if err := os.Chmod(full, 0o644); err != nil {
			t.Fatal(err)
		}
		return full
	}
	return map[string]string{
		"containerd": write("containerd-patched.tar.gz", fixture.TarGz([]fixture.File{
			{Name: "bin/containerd", Content: bin("containerd"), Mode: 0o755},
			{Name: "bin/ctr", Content: bin("ctr"), Mode: 0o755},
			{Name: "bin/containerd-shim-runc-v2", Content: bin("shim"), Mode: 0o755},
			{Name: "LICENSE", Content: "Apache-2.0\n"},
		})),
		// As README's curl writes it: a download has no execute bit.
		"runc":   write0644("runc-patched/runc."+arch, []byte(bin("runc"))),
		"crictl": write("crictl", []byte(bin("crictl"))),
		"cni-plugins": filepath.Dir(write("cni/host-local", []byte(bin("host-local")))) + func() string {
			write("cni/LICENSE", []byte("Apache-2.0\n"))
			return ""
		}(),
	}
}

var kindFiles = []string{
	"usr/local/bin/containerd", "usr/local/bin/ctr", "usr/local/bin/containerd-shim-runc-v2",
	"usr/local/bin/crictl", "usr/local/sbin/runc", "opt/cni/bin/host-local",
}

func TestKindEachMode(t *testing.T) {
	e := newKindEnv(t)
	local := localInputs(t, "amd64")
	for _, mode := range []string{"source", "release", "local"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--platform", "linux/amd64"}
			for _, a := range []string{"containerd", "runc", "crictl", "cni-plugins"} {
				m := mode
				if mode == "local" {
					m = "local:" + local[a]
				}
				args = append(args, "--mode", a+"="+m)
			}
			out, rec := e.build(t, args...)
			files := readImageFiles(t, out, "linux/amd64")
			for _, f := range append(kindFiles, "etc/os-release") {
				if files[f] == "" {
					t.Errorf("%s missing from the image", f)
				}
			}
			// readImageFiles ends a file with its mode: every binary must
			// run, runc too, which the release and the local mode give
			// as a bare file without an execute bit.
			for _, f := range kindFiles {
				if !strings.HasSuffix(files[f], " (755)") {
					t.Errorf("%s is not executable: mode %s", f, files[f][strings.LastIndex(files[f], " (")+1:])
				}
			}
			if mode == "release" && !strings.Contains(files["usr/local/bin/ctr"], "ctr release stand-in") {
				t.Errorf("ctr is not the release's: %q", files["usr/local/bin/ctr"])
			}
			if mode == "local" && !strings.Contains(files["usr/local/sbin/runc"], "patched runc") {
				t.Errorf("runc is not the local one: %q", files["usr/local/sbin/runc"])
			}
			for _, a := range rec.Artifacts {
				if a.Mode != mode {
					t.Errorf("%s recorded in %s mode", a.Name, a.Mode)
				}
				if len(a.Files) == 0 || a.Files[0].SHA256 == "" {
					t.Errorf("%s: no file digests recorded", a.Name)
				}
				switch mode {
				case "source":
					repo := map[string]string{"containerd": "containerd", "runc": "runc", "crictl": "cri-tools", "cni-plugins": "plugins"}[a.Name]
					if a.Commit != e.commits[repo] || a.Tag != "v"+a.Version || !strings.HasSuffix(a.Repo, "/"+repo) || a.GoVersion == "" {
						t.Errorf("%s: source record %+v", a.Name, a.Record)
					}
					if len(a.GoBinaries) == 0 || a.GoBinaries[0].GoVersion != a.GoVersion {
						t.Errorf("%s: Go binaries %+v, toolchain %s", a.Name, a.GoBinaries, a.GoVersion)
					}
					if files["LICENSES/"+a.Name+"/LICENSE"] == "" {
						t.Errorf("%s: licence not placed under /LICENSES/%s/", a.Name, a.Name)
					}
				case "release":
					if !strings.HasPrefix(a.URL, e.srv.URL) || len(a.SHA256) != 64 {
						t.Errorf("%s: release record %+v", a.Name, a.Record)
					}
				case "local":
					if a.Path == "" || len(a.SHA256) != 64 {
						t.Errorf("%s: local record %+v", a.Name, a.Record)
					}
				}
			}
		})
	}
	// The CNI release's licence is taken although only four plugins are.
	out, _ := e.build(t, "--platform", "linux/arm64", "--mode", "cni-plugins=release", "--mode", "runc=release")
	files := readImageFiles(t, out, "linux/arm64")
	if files["LICENSES/cni-plugins/LICENSE"] == "" || files["opt/cni/bin/bridge"] != "" || files["opt/cni/bin/LICENSE"] != "" {
		t.Errorf("cni release placement: licence %q, bridge %q", files["LICENSES/cni-plugins/LICENSE"], files["opt/cni/bin/bridge"])
	}
}

func TestKindMixedModesAndDeterminism(t *testing.T) {
	e := newKindEnv(t)
	local := localInputs(t, "arm64")
	args := []string{"--platform", "linux/arm64", "--mode", "containerd=release", "--mode", "runc=local:" + local["runc"]}
	// crictl and cni-plugins stay in their default mode: source.
	// Each build has a cache of its own, so that a layer or artifact reused
	// from the first cannot hide a difference.
	out, rec := e.build(t, append(args, "--cache-dir", t.TempDir())...)
	modes := map[string]string{}
	for _, a := range rec.Artifacts {
		modes[a.Name] = a.Mode
	}
	want := map[string]string{"containerd": "release", "runc": "local", "crictl": "source", "cni-plugins": "source"}
	for k, v := range want {
		if modes[k] != v {
			t.Errorf("%s built in %s mode, want %s", k, modes[k], v)
		}
	}
	// runc.arm64 given at build time is placed as runc (filename).
	if got := readImageFiles(t, out, "linux/arm64")["usr/local/sbin/runc"]; !strings.Contains(got, "patched runc") {
		t.Errorf("/usr/local/sbin/runc holds %q", got)
	}
	// A second machine: fresh clones of the same commits, same digest.
	e2 := newKindEnv(t)
	out2, _ := e2.build(t, append(args, "--cache-dir", t.TempDir())...)
	if a, b := layoutIndex(t, out).Manifests[0].Digest, layoutIndex(t, out2).Manifests[0].Digest; a != b {
		t.Errorf("same inputs, different digests: %s vs %s", a, b)
	}
}

// The unchosen modes are never looked at: a source repository that does
// not exist and a release server that fails every request cost nothing.
func TestModesAreLazy(t *testing.T) {
	var hits atomic.Int64
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "release server down", http.StatusInternalServerError)
	}))
	defer failing.Close()
	local := localInputs(t, "amd64")
	dir := t.TempDir()
	args := []string{"build", "-q", "-f", copyExample(t, "kind-base"), "-o", "oci:" + filepath.Join(dir, "out"),
		"--platform", "linux/amd64",
		"--arg", "GIT=file:///nonexistent/repositories",
		"--arg", "RELEASES=" + failing.URL,
		"--arg", "BASE=scratch"}
	for _, a := range []string{"containerd", "runc", "crictl", "cni-plugins"} {
		args = append(args, "--mode", a+"=local:"+local[a])
	}
	mustPallet(t, args...)
	if n := hits.Load(); n != 0 {
		t.Errorf("the release server saw %d request(s); unchosen modes must do no work", n)
	}
}

func TestModeErrors(t *testing.T) {
	e := newKindEnv(t)
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown artifact", []string{"--mode", "dockerd=release"}, "mode choice dockerd: no artifact dockerd"},
		{"unknown mode", []string{"--mode", "runc=nightly"}, "artifact runc has modes source, release, local"},
		{"local without path", []string{"--mode", "runc=local"}, "needs a path, given when building (a mode choice local:PATH)"},
		{"path on release", []string{"--mode", "runc=release:/tmp/x"}, "only the local mode takes a path"},
		{"old go", []string{"--platform", "linux/amd64", "--mode", "runc=source", "--mode", "containerd=release", "--mode", "crictl=release", "--mode", "cni-plugins=release", "--min-go", "1.99.1"}, "source mode): runc was built with go1."},
		// crictl's release ships no licence file (from source, it links a
		// module without one: TestKindModuleLicencesFromSource).
		{"require licences", []string{"--platform", "linux/amd64", "--mode", "crictl=release", "--require-licenses"}, "artifact crictl (linux/amd64, release mode): no licence file found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pallet(t, append(e.args(out), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("output written by a failed build")
			}
		})
	}
	// --min-go at or below the toolchain passes.
	mustPallet(t, append(e.args(out), "--platform", "linux/amd64", "--min-go", "1.22.0")...)
}

// A local path chosen in a --modes file that is not there is blamed on
// the modes file's line, where the user wrote it, not on the recipe's
// local mode.
func TestModesFileLocalPathMissingSaidThere(t *testing.T) {
	e := newKindEnv(t)
	modes := filepath.Join(t.TempDir(), "modes.yaml")
	if err := os.WriteFile(modes, []byte("# site choices\nrunc: local:/nonexistent/runc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), "--platform", "linux/amd64", "--modes", modes)...)
	want := modes + ":2: artifact runc (linux/amd64, local mode): local path: stat /nonexistent/runc"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}

// Pins are checked: a commit the repository lacks, a tag that moved, a
// digest that does not match. Each fails clearly and writes nothing.
func TestPinFailures(t *testing.T) {
	e := newKindEnv(t)
	src, err := os.ReadFile(e.recipe)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, mode, want string
	}{
		{"missing commit", e.commits["runc"], strings.Repeat("ab", 20), "runc=source", "commit abababab"},
		{"moved tag", "tag: v1.2.4", "tag: v1.2.3", "runc=source", "has no tag v1.2.3"},
		{"wrong sha256", "35554a66d3da566ab6e287f25fd3e3d5f9c35ec9aeddbd21aaf9b81967f17293", strings.Repeat("0", 64), "runc=release", "sha256 mismatch"},
		{"short commit", e.commits["runc"], e.commits["runc"][:12], "runc=source", "must be a full commit hash"},
		{"missing package", "          packages: .\n", "          packages: ./cmd/runc-nope\n", "runc=source", "package ./cmd/runc-nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(src), tc.old) {
				t.Fatalf("recipe lacks %q", tc.old)
			}
			changed := strings.Replace(string(src), tc.old, tc.new, 1)
			if err := os.WriteFile(e.recipe, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(e.recipe, src, 0o644)
			out := filepath.Join(t.TempDir(), "out")
			_, err := pallet(t, append(e.args(out), "--platform", "linux/amd64", "--mode", tc.mode)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			// Said at the line of the pin that failed, not of its section.
			at := fmt.Sprintf("%s:%d:", e.recipe, strings.Count(changed[:strings.Index(changed, tc.new)], "\n")+1)
			if err != nil && !strings.HasPrefix(err.Error(), at) {
				t.Errorf("got %v, want it at %s", err, at)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("output written by a failed build")
			}
		})
	}
}

// pallet fetch says a pin upstream no longer matches where it was
// written, as a build does: a moved tag at the tag's line.
func TestFetchMovedTagAtLine(t *testing.T) {
	e := newKindEnv(t)
	runc := filepath.Join(e.dir, "git", "runc")
	fixture.Git(t, runc, "commit", "-q", "--allow-empty", "-m", "after the release")
	fixture.Git(t, runc, "tag", "-f", "-a", "-m", "moved", "v1.2.4")
	src, err := os.ReadFile(e.recipe)
	if err != nil {
		t.Fatal(err)
	}
	// runc's own tag line, after its repository's.
	i := strings.Index(string(src), "{{GIT}}/runc")
	i += strings.Index(string(src[i:]), "tag: v1.2.4")
	at := fmt.Sprintf("%s:%d:", e.recipe, strings.Count(string(src[:i]), "\n")+1)
	_, err = pallet(t, "fetch", "-q", "-f", e.recipe, "--mirror", t.TempDir(), "--platform", "linux/amd64",
		"--arg", "GIT=file://"+filepath.Join(e.dir, "git"), "--arg", "RELEASES="+e.srv.URL)
	if err == nil || !strings.HasPrefix(err.Error(), at) || !strings.Contains(err.Error(), "tag v1.2.4 points at") {
		t.Errorf("fetch with runc's tag moved: %v; want it at %s", err, at)
	}
}

// pallet fetch fills a mirror; with the network gone (release server
// closed, repositories deleted) an offline build still works from it, and
// the same mirror served over http works as --mirror-url.
func TestFetchThenOffline(t *testing.T) {
	e := newKindEnv(t)
	// Named relative to where pallet runs, as a user would: the go
	// command is given it absolute.
	t.Chdir(t.TempDir())
	mirror := "mirror"
	fetchArgs := []string{"fetch", "-q", "-f", e.recipe, "--mirror", mirror,
		"--arg", "GIT=file://" + filepath.Join(e.dir, "git"), "--arg", "RELEASES=" + e.srv.URL}
	mustPallet(t, fetchArgs...)
	online, _ := e.build(t, "--modes", filepath.Join(filepath.Dir(e.recipe), "release-modes.yaml"))

	e.srv.Close()
	if err := os.RemoveAll(filepath.Join(e.dir, "git")); err != nil {
		t.Fatal(err)
	}
	// --no-cache: the artifacts must come from the mirror, not the cache.
	offline, _ := e.build(t, "--no-cache", "--offline", "--mirror", mirror, "--modes", filepath.Join(filepath.Dir(e.recipe), "release-modes.yaml"))
	if a, b := layoutIndex(t, online).Manifests[0].Digest, layoutIndex(t, offline).Manifests[0].Digest; a != b {
		t.Errorf("offline build %s differs from online %s", b, a)
	}
	e.build(t, "--no-cache", "--offline", "--mirror", mirror, "--platform", "linux/amd64") // sources, from the mirrored repositories

	mirrorSrv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer mirrorSrv.Close()
	e.build(t, "--no-cache", "--mirror-url", mirrorSrv.URL, "--platform", "linux/arm64", "--mode", "runc=release", "--mode", "crictl=source")

	// Something not mirrored fails clearly, naming what is missing.
	empty := t.TempDir()
	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), "--no-cache", "--offline", "--mirror", empty, "--platform", "linux/amd64", "--modes", filepath.Join(filepath.Dir(e.recipe), "release-modes.yaml"))...)
	if err == nil || !strings.Contains(err.Error(), "offline: ") || !strings.Contains(err.Error(), "is not in the mirror") {
		t.Errorf("missing from mirror: %v", err)
	}
}

// --offline without --mirror builds from what earlier builds kept: the
// cache's downloads and artifacts, and the go command's module cache. The
// network gone, a rebuild gives the same image; what the cache lacks is
// named, with the way to get it.
func TestOfflineFromTheCache(t *testing.T) {
	e := newKindEnv(t)
	cacheDir := t.TempDir()
	modes := filepath.Join(filepath.Dir(e.recipe), "release-modes.yaml")
	online, _ := e.build(t, "--cache-dir", cacheDir, "--platform", "linux/amd64", "--modes", modes)

	e.srv.Close()
	if err := os.RemoveAll(filepath.Join(e.dir, "git")); err != nil {
		t.Fatal(err)
	}
	offline, _ := e.build(t, "--cache-dir", cacheDir, "--offline", "--platform", "linux/amd64", "--modes", modes)
	if a, b := layoutIndex(t, online).Manifests[0].Digest, layoutIndex(t, offline).Manifests[0].Digest; a != b {
		t.Errorf("offline build %s differs from online %s", b, a)
	}

	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), "--cache-dir", t.TempDir(), "--offline", "--platform", "linux/amd64", "--modes", modes)...)
	if err == nil || !strings.Contains(err.Error(), "offline: ") || !strings.Contains(err.Error(), "is not in the cache") {
		t.Errorf("offline with an empty cache: %v", err)
	}
}

// The Go that builds a source artifact is the recipe's, not the host's:
// GOTOOLCHAIN fetches it from the module proxy. The record and --min-go
// read the version from the binaries themselves.
func TestGoVersionPin(t *testing.T) {
	e := newKindEnv(t)
	const pinned = "1.25.5"
	_, rec := e.build(t, "--platform", "linux/amd64", "--mode", "runc=release", "--arg", "GO_VERSION="+pinned)
	n := 0
	for _, a := range rec.Artifacts {
		if a.Mode != "source" {
			continue
		}
		if a.GoVersion != "go"+pinned {
			t.Errorf("%s: built with %s, want go%s", a.Name, a.GoVersion, pinned)
		}
		files := map[string]bool{}
		for _, f := range a.Files {
			files[f.Path] = true
		}
		for _, g := range a.GoBinaries {
			n++
			if g.GoVersion != "go"+pinned {
				t.Errorf("%s/%s: build info says %s", a.Name, g.Path, g.GoVersion)
			}
			if !files[g.Path] {
				t.Errorf("%s: Go binary recorded at %q, which is none of the artifact's files", a.Name, g.Path)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d Go binaries recorded", n)
	}
	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), "--platform", "linux/amd64", "--mode", "runc=release", "--arg", "GO_VERSION="+pinned, "--min-go", "1.26.0")...)
	if err == nil || !regexp.MustCompile(`source mode\): [a-z][a-z0-9/-]* was built with go`+regexp.QuoteMeta(pinned)+`, older than the minimum Go 1\.26\.0`).MatchString(err.Error()) {
		t.Errorf("--min-go above the pinned Go: %v", err)
	}
}

// An air-gapped site also needs the pinned Go toolchain: pallet fetch puts
// it (a module, like any dependency) in the mirror's module cache, and an
// offline build with an empty module cache takes it from there.
func TestOfflineWithPinnedToolchain(t *testing.T) {
	e := newKindEnv(t)
	mirror := filepath.Join(t.TempDir(), "mirror")
	pin := []string{"--arg", "GO_VERSION=1.25.5", "--platform", "linux/amd64"}
	mustPallet(t, append([]string{"fetch", "-q", "-f", e.recipe, "--mirror", mirror,
		"--arg", "GIT=file://" + filepath.Join(e.dir, "git"), "--arg", "RELEASES=" + e.srv.URL}, pin...)...)
	if _, err := os.Stat(filepath.Join(mirror, "gomod", "cache", "download", "golang.org", "toolchain")); err != nil {
		t.Fatalf("the pinned toolchain is not in the mirror: %v", err)
	}
	e.srv.Close()
	os.RemoveAll(filepath.Join(e.dir, "git"))
	// A machine that has never downloaded go1.25.5.
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw")
	_, rec := e.build(t, append([]string{"--no-cache", "--offline", "--mirror", mirror, "--mode", "runc=release"}, pin...)...)
	for _, a := range rec.Artifacts {
		if a.Mode == "source" && a.GoVersion != "go1.25.5" {
			t.Errorf("%s built offline with %s", a.Name, a.GoVersion)
		}
	}

	// The go command checks the toolchain it switches to by nothing when
	// its proxy is one file:// and GOSUMDB=off, as offline: pallet does,
	// by the checksum database's record fetch kept in the mirror. A
	// toolchain zip whose go is another, still a valid zip, is refused
	// before anything of it runs.
	zipFile := filepath.Join(mirror, "gomod", "cache", "download", "golang.org", "toolchain", "@v", "v0.0.1-go1.25.5.linux-amd64.zip")
	ran := filepath.Join(t.TempDir(), "ran")
	replaceZipEntry(t, zipFile, "golang.org/toolchain@v0.0.1-go1.25.5.linux-amd64/bin/go", "#!/bin/sh\necho >"+ran+"\nexit 1\n")
	t.Setenv("GOMODCACHE", t.TempDir())
	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), append([]string{"--no-cache", "--offline", "--mirror", mirror, "--mode", "runc=release"}, pin...)...)...)
	if _, statErr := os.Stat(ran); statErr == nil {
		t.Errorf("the offline build ran the go of a toolchain zip replaced in the mirror (%v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), zipFile+" has h1:") || !strings.Contains(err.Error(), "the checksum database says h1:") {
		t.Errorf("a toolchain zip replaced in the mirror: want a refusal naming %s and both hashes, got %v", zipFile, err)
	}
}

// replaceZipEntry rewrites the zip file with the entry name's content
// replaced, keeping every other entry as it was.
func replaceZipEntry(t *testing.T, file, name, content string) {
	t.Helper()
	r, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	found := false
	for _, f := range r.File {
		if f.Name != name {
			if err := w.Copy(f); err != nil {
				t.Fatal(err)
			}
			continue
		}
		found = true
		fw, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(fw, content); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("%s holds no %s", file, name)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A downloaded release is checked like a built one: its Go build info is
// read from the binary itself, so --min-go shows that an upstream release
// was built with an older Go than the site requires.
func TestReleaseGoBinary(t *testing.T) {
	e := newKindEnv(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/upstream/runc\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"runc\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(src, "runc")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	releases := fixture.KindReleases()
	releases["/opencontainers/runc/releases/download/v1.2.4/runc.amd64"] = data
	e.srv = fixture.Serve(t, releases)
	recipe, err := os.ReadFile(e.recipe)
	if err != nil {
		t.Fatal(err)
	}
	const oldPin = "linux/amd64: 35554a66d3da566ab6e287f25fd3e3d5f9c35ec9aeddbd21aaf9b81967f17293"
	if !strings.Contains(string(recipe), oldPin) {
		t.Fatal("the example's runc pin moved; update this test")
	}
	recipe = []byte(strings.Replace(string(recipe), oldPin, "linux/amd64: "+fixture.SHA256(data), 1))
	if err := os.WriteFile(e.recipe, recipe, 0o644); err != nil {
		t.Fatal(err)
	}

	modes := []string{"--platform", "linux/amd64", "--mode", "runc=release", "--mode", "containerd=release", "--mode", "crictl=release", "--mode", "cni-plugins=release"}
	_, rec := e.build(t, modes...)
	var found bool
	for _, a := range rec.Artifacts {
		if a.Name != "runc" {
			continue
		}
		found = true
		// Its one module is the main one, built from a directory: no
		// version to fetch its licence by, and none in the release.
		want := record.GoBinary{Path: "runc", GoVersion: info.GoVersion, MainModule: "example.com/upstream/runc", MainVersion: "(devel)",
			Modules: []record.Module{{Path: "example.com/upstream/runc", Version: "(devel)", Missing: true}}}
		if len(a.GoBinaries) != 1 || !reflect.DeepEqual(a.GoBinaries[0], want) {
			t.Errorf("runc release: Go binaries %+v, want [%+v]", a.GoBinaries, want)
		}
	}
	if !found {
		t.Fatal("no runc artifact in the record")
	}

	_, err = pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), append(modes, "--min-go", "1.99.0")...)...)
	if err == nil || !strings.Contains(err.Error(), "artifact runc (linux/amd64, release mode): runc was built with "+info.GoVersion+", older than the minimum Go 1.99.0") {
		t.Errorf("--min-go on a release: %v", err)
	}
}

// runc is built with cgo, as upstream links libseccomp, by the C compiler
// the recipe names for each platform: for arm64, the cross compiler.
func TestKindCgoCrossCompile(t *testing.T) {
	needTool(t, "aarch64-linux-gnu-gcc")
	e := newKindEnv(t)
	out := filepath.Join(t.TempDir(), "out")
	args := slices.DeleteFunc(e.args(out), func(a string) bool { return a == "-q" })
	log := mustPallet(t, append(args, "--progress", "plain", "--platform", "linux/arm64", "--mode", "runc=source", "--mode", "containerd=release", "--mode", "crictl=release", "--mode", "cni-plugins=release")...)
	rec := readRecord(t, out+".record.json")
	// The base holds the loader and the libraries runc needs (libc.so.6,
	// where Debian keeps it): no warning of either.
	if strings.Contains(log, "needs the shared") || strings.Contains(log, "dynamically linked") {
		t.Errorf("warned of what the base holds:\n%s", log)
	}
	var runc []byte
	walkImage(t, layoutImage(t, out, "linux/arm64"), func(h *tar.Header, r io.Reader) {
		if h.Name == "usr/local/sbin/runc" {
			runc, _ = io.ReadAll(r)
		}
	})
	f, err := elf.NewFile(bytes.NewReader(runc))
	if err != nil {
		t.Fatalf("runc is not an ELF file: %v", err)
	}
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("runc machine %v, want aarch64", f.Machine)
	}
	// cgo links against the C library: the binary has an interpreter,
	// which a CGO_ENABLED=0 build would not.
	var interp bool
	for _, p := range f.Progs {
		interp = interp || p.Type == elf.PT_INTERP
	}
	if !interp {
		t.Error("runc has no ELF interpreter: it was not linked with cgo")
	}
	for _, a := range rec.Artifacts {
		if a.Name == "runc" && a.Mode != "source" {
			t.Errorf("runc recorded in %s mode", a.Mode)
		}
	}
}

// Offline without --mirror, a recipe with no Go build needs no go
// command: a machine without Go builds it from its files.
func TestOfflineWithoutGo(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "etc", "agent.conf"), "mode: offline\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  config:
    local: {path: ./etc/agent.conf}
    licenses: none
    check: false
images:
  agent:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: config, dest: /etc/agent.conf}
`)
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(dir, "out")
	if msg, err := pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--offline", "--cache-dir", t.TempDir(), "-o", "oci:"+out); err != nil {
		t.Fatalf("offline build without a go command: %v\n%s", err, msg)
	}
	if n := len(layoutIndex(t, out).Manifests); n != 1 {
		t.Errorf("%d images in the layout, want 1", n)
	}
}
