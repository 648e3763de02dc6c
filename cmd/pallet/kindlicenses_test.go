package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/record"
)

// kindModuleFiles are the licence and notice files each stand-in module
// of examples/kind-base/modules ships, by path in the module; bare has
// none.
var kindModuleFiles = map[string][]string{
	"errdefs":       {"LICENSE", "NOTICE"},
	"ttrpc":         {"LICENSE", "NOTICE"},
	"go-multierror": {"LICENSE"},
	"yaml":          {"LICENSE", "goyaml/LICENSE", "goyaml/NOTICE"},
	"bare":          nil,
}

// checkKindModuleLicences checks, for each of the image's artifacts with
// Go binaries, that /LICENSES/<artifact>/<module path>/ holds every file
// of every stand-in module its programs link, byte for byte, that the
// MPL-2.0 module comes with its source offer, and that the record
// classifies them.
func checkKindModuleLicences(t *testing.T, modules string, files map[string]string, rec *record.Build, artifacts []string) {
	t.Helper()
	uses := map[string][]string{}
	for _, r := range fixture.KindRepos {
		name := map[string]string{"cri-tools": "crictl", "plugins": "cni-plugins"}[r.Name]
		if name == "" {
			name = r.Name
		}
		uses[name] = r.Uses
		for _, d := range r.Uses {
			if m, _ := fixture.KindModuleByDir(d); len(m.Requires) > 0 {
				uses[name] = append(uses[name], m.Requires...)
			}
		}
	}
	for _, a := range artifacts {
		for _, d := range uses[a] {
			m, _ := fixture.KindModuleByDir(d)
			for _, f := range kindModuleFiles[d] {
				want, err := os.ReadFile(filepath.Join(modules, d, filepath.FromSlash(f)))
				if err != nil {
					t.Fatal(err)
				}
				p := "LICENSES/" + a + "/" + m.Path + "/" + f
				if got := files[p]; got != string(want)+" (644)" {
					t.Errorf("%s: %d bytes, want the module's %s (%d bytes)", p, len(got), f, len(want))
				}
			}
		}
	}
	for p := range files {
		if strings.Contains(p, "/example.com/standin/bare/") {
			t.Errorf("%s shipped for the module without licence", p)
		}
	}
	if a := artifacts[0]; a == "containerd" {
		offer := files["LICENSES/containerd/example.com/standin/go-multierror/SOURCE-OFFER.txt"]
		if !strings.Contains(offer, "MPL-2.0") || !strings.Contains(offer, "example.com/standin/go-multierror") {
			t.Errorf("no source offer for the MPL-2.0 module: %q", offer)
		}
	}
	licences := map[string][]string{}
	for _, a := range rec.Artifacts {
		for _, gb := range a.GoBinaries {
			for _, m := range gb.Modules {
				licences[m.Path] = m.Licenses
			}
		}
	}
	for path, want := range map[string][]string{
		"example.com/standin/errdefs":       {"Apache-2.0"},
		"example.com/standin/go-multierror": {"MPL-2.0"},
		"example.com/standin/yaml":          {"Apache-2.0", "MIT"},
	} {
		if got, ok := licences[path]; ok && !slices.Equal(got, want) {
			t.Errorf("record: %s classified %v, want %v", path, got, want)
		}
	}
}

// The stand-in programs built from source link stand-in modules their
// repositories replace with directories: every licence and notice of
// each, a nested one included, lands under /LICENSES/<artifact>/<module>/
// by default, once; the MPL-2.0 module gets its source offer; the module
// without a licence is a warning naming it, and an error with
// --require-licenses; --module-licenses=false ships the artifacts' own
// licences only.
func TestKindModuleLicencesFromSource(t *testing.T) {
	e := newKindEnv(t)
	modules := filepath.Join(filepath.Dir(e.recipe), "modules")
	out := filepath.Join(t.TempDir(), "out")
	cache := t.TempDir()
	args := append(e.args(out), "--platform", "linux/amd64", "--progress", "plain", "--cache-dir", cache)
	args = slices.DeleteFunc(args, func(s string) bool { return s == "-q" })
	log := mustPallet(t, args...)
	if !strings.Contains(log, "crictl links modules without a licence file: example.com/standin/bare@v0.1.0") {
		t.Errorf("no warning naming the module without a licence:\n%s", log)
	}
	files := readImageFiles(t, out, "linux/amd64")
	rec := readRecord(t, out+".record.json")
	checkKindModuleLicences(t, modules, files, rec, []string{"containerd", "crictl", "cni-plugins", "runc"})
	if files["LICENSES/containerd/LICENSE"] == "" || files["LICENSES/containerd/github.com/containerd/containerd/v2/LICENSE"] != "" {
		t.Error("the main module's licence is the artifact's own, shipped once at the top")
	}

	// Again from the cache, with the repositories gone: the replaced
	// modules' files come from what the cache kept of each checkout; the
	// image and the record's licences are the same.
	out2 := filepath.Join(t.TempDir(), "out")
	gone := filepath.Join(e.dir, "git-gone")
	if err := os.Rename(filepath.Join(e.dir, "git"), gone); err != nil {
		t.Fatal(err)
	}
	mustPallet(t, append(e.args(out2), "--platform", "linux/amd64", "--cache-dir", cache)...)
	if err := os.Rename(gone, filepath.Join(e.dir, "git")); err != nil {
		t.Fatal(err)
	}
	if a, b := layoutIndex(t, out).Manifests[0].Digest, layoutIndex(t, out2).Manifests[0].Digest; a != b {
		t.Errorf("a build from the cache gives %s, the first %s", b, a)
	}
	if a, b := recordModules(rec), recordModules(readRecord(t, out2+".record.json")); a != b {
		t.Errorf("module licences recorded from the cache:\n%s\nfirst:\n%s", b, a)
	}

	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), "--platform", "linux/amd64", "--require-licenses")...)
	if err == nil || !strings.Contains(err.Error(), "artifact crictl (linux/amd64, source mode)") || !strings.Contains(err.Error(), "example.com/standin/bare@v0.1.0") || !strings.Contains(err.Error(), "licences are required") {
		t.Errorf("--require-licenses with an unlicensed module: %v", err)
	}

	off := filepath.Join(t.TempDir(), "out")
	mustPallet(t, append(e.args(off), "--platform", "linux/amd64", "--module-licenses=false")...)
	for p := range readImageFiles(t, off, "linux/amd64") {
		if strings.HasPrefix(p, "LICENSES/") && strings.Count(p, "/") > 2 {
			t.Errorf("--module-licenses=false still ships %s", p)
		}
	}
}

// kindRelease builds a stand-in program as its upstream release would be:
// without the repository's replaces, its modules through the loopback
// module proxy, so the binary's build info names each by version and h1:
// hash.
func kindRelease(t *testing.T, e *kindEnv, repo, pkg, proxy string) []byte {
	t.Helper()
	src := filepath.Join(t.TempDir(), repo)
	if out, err := exec.Command("git", "clone", "-q", filepath.Join(e.dir, "git", repo), src).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	var drop []string
	for _, m := range fixture.KindModules {
		drop = append(drop, "-dropreplace="+m.Path)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	env := append(os.Environ(), "GOPROXY="+proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+t.TempDir(),
		"GOTOOLCHAIN=local", "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	for _, args := range [][]string{append([]string{"mod", "edit"}, drop...), {"build", "-trimpath", "-o", bin, pkg}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = src, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// kindReleaseEnv serves releases of containerd and crictl that are real
// Go programs, and the modules they name from a loopback module proxy;
// the recipe pins the new archives.
func kindReleaseEnv(t *testing.T) (e *kindEnv, proxy *fixture.Server) {
	t.Helper()
	e = newKindEnv(t)
	mods, err := fixture.KindModuleProxy(filepath.Join(filepath.Dir(e.recipe), "modules"))
	if err != nil {
		t.Fatal(err)
	}
	proxy = fixture.Serve(t, mods)
	elf := func(n string) string { return string(fixture.ELF(fixture.KindArchs["amd64"], n+" release stand-in\n")) }
	containerd := fixture.TarGz([]fixture.File{
		{Name: "bin/", Dir: true, Mode: 0o755},
		{Name: "bin/containerd", Content: string(kindRelease(t, e, "containerd", "./cmd/containerd", proxy.URL)), Mode: 0o755},
		{Name: "bin/containerd-shim-runc-v2", Content: elf("containerd-shim-runc-v2"), Mode: 0o755},
		{Name: "bin/ctr", Content: elf("ctr"), Mode: 0o755},
	})
	crictl := fixture.TarGz([]fixture.File{{Name: "crictl", Content: string(kindRelease(t, e, "cri-tools", "./cmd/crictl", proxy.URL)), Mode: 0o755}})
	releases := fixture.KindReleases()
	recipe, err := os.ReadFile(e.recipe)
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string][]byte{
		"/containerd/containerd/releases/download/v2.0.2/containerd-2.0.2-linux-amd64.tar.gz":    containerd,
		"/kubernetes-sigs/cri-tools/releases/download/v1.32.0/crictl-v1.32.0-linux-amd64.tar.gz": crictl,
	} {
		old := fixture.SHA256(releases[p])
		if !strings.Contains(string(recipe), old) {
			t.Fatalf("the example no longer pins %s at %s; update this test", p, old)
		}
		recipe = []byte(strings.Replace(string(recipe), old, fixture.SHA256(data), 1))
		releases[p] = data
	}
	if err := os.WriteFile(e.recipe, recipe, 0o644); err != nil {
		t.Fatal(err)
	}
	e.srv = fixture.Serve(t, releases)
	return e, proxy
}

// Releases whose binaries name their modules by version: each module's zip
// comes through the module proxy (a loopback one here), proven against the
// binary's h1: hash, and ships the same files as the source build; a
// module the proxy cannot give fails the build naming it and saying how to
// proceed.
func TestKindModuleLicencesFromRelease(t *testing.T) {
	e, proxy := kindReleaseEnv(t)
	modules := filepath.Join(filepath.Dir(e.recipe), "modules")
	t.Setenv("GOPROXY", proxy.URL)
	t.Setenv("GONOSUMDB", "example.com/standin")
	t.Setenv("GOFLAGS", "-modcacherw")
	t.Setenv("GOMODCACHE", t.TempDir())
	modes := []string{"--platform", "linux/amd64", "--modes", filepath.Join(filepath.Dir(e.recipe), "release-modes.yaml")}
	out, rec := e.build(t, modes...)
	files := readImageFiles(t, out, "linux/amd64")
	checkKindModuleLicences(t, modules, files, rec, []string{"containerd", "crictl"})
	zips := 0
	for _, r := range proxy.Requests() {
		if strings.HasSuffix(r, ".zip") {
			zips++
		}
	}
	if zips == 0 {
		t.Error("no module zip was fetched from the proxy")
	}
	for _, a := range rec.Artifacts {
		for _, gb := range a.GoBinaries {
			for _, m := range gb.Modules {
				if strings.HasPrefix(m.Path, "example.com/standin/") && !strings.HasPrefix(m.Sum, "h1:") {
					t.Errorf("%s in %s: no h1: hash recorded (%q)", m.Path, a.Name, m.Sum)
				}
			}
		}
	}

	t.Setenv("GOPROXY", "off")
	t.Setenv("GOMODCACHE", t.TempDir())
	_, err := pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), modes...)...)
	if err == nil || !strings.Contains(err.Error(), "example.com/standin/") || !strings.Contains(err.Error(), "--module-licenses=false") {
		t.Errorf("a release whose modules cannot be fetched: %v", err)
	}
	mustPallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), append(modes, "--module-licenses=false")...)...)
	// A proxy that has not the module is named as the user set it, not
	// as the loopback gate pallet puts in front of it.
	empty := fixture.Serve(t, map[string][]byte{})
	t.Setenv("GOPROXY", empty.URL)
	t.Setenv("GOMODCACHE", t.TempDir())
	_, err = pallet(t, append(e.args(filepath.Join(t.TempDir(), "out")), modes...)...)
	if err == nil || !strings.Contains(err.Error(), empty.URL+"/example.com/standin/") || regexp.MustCompile(`127\.0\.0\.1:\d+/\d+/http/`).MatchString(err.Error()) {
		t.Errorf("a release whose modules the proxy has not, the error names no %s/example.com/standin/... or names pallet's gate: %v", empty.URL, err)
	}
	// The binary is named by its path in the artifact, not by where the
	// build keeps it (a cache entry).
	if err == nil || !regexp.MustCompile(`: licences of (crictl|containerd): `).MatchString(err.Error()) || strings.Contains(err.Error(), "licences of /") {
		t.Errorf("a release whose modules the proxy has not, the error names the binary by a path of the build's: %v", err)
	}

	// Air-gapped: pallet fetch mirrors the releases and the modules their
	// binaries link, so that an offline build with an empty module cache
	// and no proxy ships their licences. Without them in the mirror, the
	// offline build says which module is missing and how to add it.
	t.Setenv("GOPROXY", proxy.URL)
	mirror := filepath.Join(t.TempDir(), "mirror")
	mustPallet(t, "fetch", "-q", "-f", e.recipe, "--mirror", mirror, "--platform", "linux/amd64",
		"--arg", "GIT=file://"+filepath.Join(e.dir, "git"), "--arg", "RELEASES="+e.srv.URL)
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOPROXY", "off")
	offlineOut := filepath.Join(t.TempDir(), "out")
	offline := append(e.args(offlineOut), append(modes, "--offline", "--mirror", mirror, "--no-cache")...)
	mustPallet(t, offline...)
	checkKindModuleLicences(t, modules, readImageFiles(t, offlineOut, "linux/amd64"), readRecord(t, offlineOut+".record.json"), []string{"containerd", "crictl"})

	if err := os.RemoveAll(filepath.Join(mirror, "gomod", "cache", "download", "example.com", "standin")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMODCACHE", t.TempDir())
	_, err = pallet(t, offline...)
	if err == nil || !strings.Contains(err.Error(), "offline: module example.com/standin/") || !strings.Contains(err.Error(), "GOMODCACHE=MIRROR/gomod go mod download MODULE@VERSION") {
		t.Fatalf("offline release without its modules in the mirror: %v", err)
	}
}

// pallet fetch forgets the go env answers it asked for the modules the
// releases' binaries link, in directories it removes: a process fetching
// again and again (tests, a server) kept one more for each binary.
func TestFetchLeavesNoToolchainAnswers(t *testing.T) {
	e, proxy := kindReleaseEnv(t)
	t.Setenv("GOPROXY", proxy.URL)
	t.Setenv("GONOSUMDB", "example.com/standin")
	t.Setenv("GOFLAGS", "-modcacherw")
	held := artifact.ToolchainAnswersHeld()
	for i := range 2 {
		t.Setenv("GOMODCACHE", t.TempDir())
		mustPallet(t, "fetch", "-q", "-f", e.recipe, "--mirror", filepath.Join(t.TempDir(), "mirror"), "--platform", "linux/amd64",
			"--arg", "GIT=file://"+filepath.Join(e.dir, "git"), "--arg", "RELEASES="+e.srv.URL)
		if n := artifact.ToolchainAnswersHeld(); n != held {
			t.Fatalf("after fetch %d, %d go env answers held, want %d", i+1, n, held)
		}
	}
}

// The SBOMs of the kind-base image list every module of every Go binary
// with its purl, h1: hash and the licence concluded from its files, and
// two builds with separate caches (artifacts and module cache alike) give
// the same bytes.
func TestKindSBOMReproducible(t *testing.T) {
	e, proxy := kindReleaseEnv(t)
	t.Setenv("GOPROXY", proxy.URL)
	t.Setenv("GONOSUMDB", "example.com/standin")
	t.Setenv("GOFLAGS", "-modcacherw")
	modes := []string{"--platform", "linux/amd64", "--mode", "containerd=release", "--mode", "crictl=release", "--sbom"}
	var docs [2][2][]byte
	for i := range docs {
		t.Setenv("GOMODCACHE", t.TempDir())
		out := filepath.Join(t.TempDir(), "out")
		e.build(t, append(modes, "--cache-dir", t.TempDir(), "--sbom-dir", out+".sbom")...)
		for j, f := range []string{"kind-base_linux-amd64.sbom.spdx.json", "kind-base_linux-amd64.sbom.cdx.json"} {
			data, err := os.ReadFile(filepath.Join(out+".sbom", f))
			if err != nil {
				entries, _ := os.ReadDir(out + ".sbom")
				t.Fatalf("%v (the directory holds %v)", err, entries)
			}
			docs[i][j] = data
		}
	}
	if string(docs[0][0]) != string(docs[1][0]) || string(docs[0][1]) != string(docs[1][1]) {
		t.Error("two builds in separate caches give different SBOMs")
	}

	var spdx struct {
		Packages []struct {
			Name, VersionInfo, LicenseConcluded string
			ExternalRefs                        []struct{ ReferenceLocator string }
		}
	}
	if err := json.Unmarshal(docs[0][0], &spdx); err != nil {
		t.Fatal(err)
	}
	var cdx struct {
		Components []struct {
			Purl     string
			Licenses []struct{ Expression string }
			Hashes   []struct{ Content string }
		}
	}
	if err := json.Unmarshal(docs[0][1], &cdx); err != nil {
		t.Fatal(err)
	}
	// runc, built from its source at a tagged commit, names its main
	// module by the tag (as the binary does, stamped from the tag).
	runc := "pkg:golang/github.com/opencontainers/runc@v1.2.4"
	if !slices.ContainsFunc(cdx.Components, func(c struct {
		Purl     string
		Licenses []struct{ Expression string }
		Hashes   []struct{ Content string }
	}) bool {
		return c.Purl == runc
	}) {
		t.Errorf("CycloneDX: no component %s", runc)
	}
	// containerd and crictl, from their releases, link every stand-in
	// module between them, each by version and hash.
	for _, m := range fixture.KindModules {
		purl := "pkg:golang/" + m.Path + "@" + m.Version
		want := map[string]string{"bare": "NOASSERTION", "errdefs": "Apache-2.0", "go-multierror": "MPL-2.0", "ttrpc": "Apache-2.0", "yaml": "Apache-2.0 AND MIT"}[m.Dir]
		var found bool
		for _, p := range spdx.Packages {
			if len(p.ExternalRefs) > 0 && p.ExternalRefs[0].ReferenceLocator == purl {
				found = true
				if p.LicenseConcluded != want {
					t.Errorf("SPDX %s: licence %q, want %q", purl, p.LicenseConcluded, want)
				}
			}
		}
		if !found {
			t.Errorf("SPDX: no package %s", purl)
		}
		found = false
		for _, c := range cdx.Components {
			if c.Purl != purl {
				continue
			}
			found = true
			if len(c.Hashes) != 1 || len(c.Hashes[0].Content) != 64 {
				t.Errorf("CycloneDX %s: hashes %+v", purl, c.Hashes)
			}
			if want != "NOASSERTION" && (len(c.Licenses) != 1 || c.Licenses[0].Expression != want) {
				t.Errorf("CycloneDX %s: licences %+v, want %q", purl, c.Licenses, want)
			}
		}
		if !found {
			t.Errorf("CycloneDX: no component %s", purl)
		}
	}
}

// hello links one module, its own, whose licence is the artifact's, and
// the standard library: module licences, on by default, add the Go
// toolchain's licence to its image and nothing else (not even an empty
// directory of its module).
func TestHelloModuleLicensesAddNothing(t *testing.T) {
	recipe := copyExample(t, "hello")
	var images []map[string]string
	for _, extra := range [][]string{nil, {"--module-licenses=false"}} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, append([]string{"build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:" + out}, extra...)...)
		images = append(images, readImageFiles(t, out, "linux/amd64"))
	}
	var added []string
	for p := range images[0] {
		if _, ok := images[1][p]; !ok {
			added = append(added, p)
		}
	}
	slices.Sort(added)
	ok := len(added) == 2 && strings.HasSuffix(added[0], "/") && added[1] == added[0]+"LICENSE" && len(images[0]) == len(images[1])+len(added)
	for _, p := range added {
		ok = ok && strings.HasPrefix(p, "LICENSES/hello/std@go")
	}
	for p, c := range images[1] {
		ok = ok && images[0][p] == c
	}
	if !ok {
		t.Errorf("module licences added %q to hello's image, want the Go toolchain's licence alone", added)
	}
}

// recordModules is the module licences of a record, as text to compare.
func recordModules(rec *record.Build) string {
	var b strings.Builder
	for _, a := range rec.Artifacts {
		for _, gb := range a.GoBinaries {
			data, _ := json.Marshal(gb.Modules)
			b.WriteString(a.Name + " " + gb.Path + " " + string(data) + "\n")
		}
	}
	return b.String()
}

// The module cache's place is asked of the go command once per
// environment in a build, not once per binary: releases (containerd's
// and crictl's, one Go program each, with one environment) ask once, as
// a release of 18 CNI plugins would.
func TestReleasesAskModuleCacheOnce(t *testing.T) {
	e, proxy := kindReleaseEnv(t)
	t.Setenv("GOPROXY", proxy.URL)
	t.Setenv("GONOSUMDB", "example.com/standin")
	t.Setenv("GOFLAGS", "-modcacherw")
	t.Setenv("GOMODCACHE", t.TempDir())
	log := logGoCalls(t)
	e.build(t, "--platform", "linux/amd64", "--cache-dir", t.TempDir(), "--modes", filepath.Join(filepath.Dir(e.recipe), "release-modes.yaml"))
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(calls), "env GOMODCACHE"); n != 1 {
		t.Errorf("the module cache was asked for %d times, want once:\n%s", n, calls)
	}
}
