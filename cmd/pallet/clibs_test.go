package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/record"
)

// needFile skips the test when a file an outside package installs is
// missing on a developer machine, and fails it in CI, where .ci/run
// installs the package.
func needFile(t *testing.T, file, pkg string) {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run must install %s", file, pkg)
		}
		t.Skipf("%s is missing (apt-get install -y %s); skipping", file, pkg)
	}
}

// dpkgVersion is the version dpkg says of an installed package.
func dpkgVersion(t *testing.T, pkg string) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		t.Fatalf("dpkg-query %s: %v", pkg, err)
	}
	return string(out)
}

// seccompRecipe is a cgo program linking libseccomp through pkg-config,
// as runc does, built twice: static (-extldflags -static, as runc's
// release is) and dynamic.
func seccompRecipe(t *testing.T, platforms string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/seccomp\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), `package main

// #cgo pkg-config: libseccomp
// #include <seccomp.h>
import "C"

func main() {
	v := C.seccomp_version()
	println(v.major, v.minor, v.micro)
}
`)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  static:
    go:
      module: app
      packages: .
      ldflags: ["-s", "-w", "-extldflags", "-static"]
      cgo: true
      cc: {linux/amd64: gcc, linux/arm64: aarch64-linux-gnu-gcc}
    licenses: none
  dynamic:
    go:
      module: app
      packages: .
      cgo: true
      cc: {linux/amd64: gcc, linux/arm64: aarch64-linux-gnu-gcc}
    licenses: none
images:
  seccomp:
    base: scratch
    platforms: `+platforms+`
    files:
      - {artifact: static, dest: /static/}
      - {artifact: dynamic, dest: /dynamic/}
`)
	return recipe
}

// A cgo binary contains the C libraries it links statically: the
// copyright file of the Debian package owning libseccomp.a is shipped
// under /LICENSES/<artifact>/debian/libseccomp-dev/, the record names the
// library, its package and licence, and the SBOMs have the package with
// its purl and licence, depended on by the binary. Linked dynamically,
// libseccomp is loaded from the base at run time: its licence is not
// shipped as if the binary held it, and the record says it is needed. A
// build taken from the cache ships and says the same.
func TestCgoLibraryLicences(t *testing.T) {
	needTool(t, "gcc")
	needTool(t, "pkg-config")
	needTool(t, "dpkg-query")
	needFile(t, "/usr/lib/x86_64-linux-gnu/libseccomp.a", "libseccomp-dev")
	recipe := seccompRecipe(t, "linux/amd64")
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", recipe, "--sbom", "--sbom-dir", docs, "--cache-dir", cache, "-o", "oci:"+out)

	want, err := os.ReadFile("/usr/share/doc/libseccomp-dev/copyright")
	if err != nil {
		t.Fatal(err)
	}
	files := readImageFiles(t, out, "linux/amd64")
	if got := files["LICENSES/static/debian/libseccomp-dev/copyright"]; got != string(want)+" (644)" {
		t.Errorf("static: libseccomp's copyright file: %q", got)
	}
	for f := range files {
		if strings.HasPrefix(f, "LICENSES/dynamic/debian/libseccomp") {
			t.Errorf("dynamic: %s shipped, but the binary does not contain libseccomp", f)
		}
	}
	// A static glibc binary contains the C library and libgcc too, by the
	// packages dpkg says own them.
	for _, lib := range []string{"libc.a", "libgcc.a"} {
		file, err := exec.Command("gcc", "-print-file-name="+lib).Output()
		if err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(strings.TrimSpace(string(file)))
		if err != nil {
			t.Fatal(err)
		}
		owner, err := exec.Command("dpkg-query", "-S", real).Output()
		if err != nil {
			t.Fatalf("dpkg-query -S %s: %v", real, err)
		}
		p, _, _ := strings.Cut(string(owner), ":")
		if _, ok := files["LICENSES/static/debian/"+p+"/copyright"]; !ok {
			t.Errorf("static: no copyright file of %s, which owns %s", p, real)
		}
	}

	version := dpkgVersion(t, "libseccomp-dev:amd64")
	rec := readRecord(t, out+".record.json")
	var static, dynamic *record.GoBinary
	for i := range rec.Artifacts {
		a := &rec.Artifacts[i]
		if len(a.GoBinaries) != 1 {
			t.Fatalf("%s: Go binaries %+v", a.Name, a.GoBinaries)
		}
		switch a.Name {
		case "static":
			static = &a.GoBinaries[0]
		case "dynamic":
			dynamic = &a.GoBinaries[0]
		}
	}
	i := slices.IndexFunc(static.CLibraries, func(l clibsLibrary) bool { return l.Package.Name == "libseccomp-dev" })
	if !static.Static || i < 0 {
		t.Fatalf("static: the record says %+v", static)
	}
	if l := static.CLibraries[i]; l.Version != version || l.Arch != "amd64" || l.Copyright != "debian/libseccomp-dev/copyright" || !slices.Equal(l.Licenses, []string{"LGPL-2.1-only"}) || l.Flag != "-lseccomp" {
		t.Errorf("static: libseccomp recorded as %+v", l)
	}
	if dynamic.Static || !slices.Contains(dynamic.Needed, "libseccomp.so.2") || slices.ContainsFunc(dynamic.CLibraries, func(l clibsLibrary) bool { return l.Package.Name == "libseccomp-dev" }) {
		t.Errorf("dynamic: the record says %+v", dynamic)
	}

	// upstream names the source package, by which scanners match
	// Debian's vulnerabilities of libseccomp.
	purl := "pkg:deb/debian/libseccomp-dev@" + strings.ReplaceAll(version, "+", "%2B") + "?arch=amd64&distro=" + osRelease(t) + "&upstream=libseccomp"
	spdx := readSBOM(t, docs, "*.spdx.json")
	var doc struct {
		Packages []struct {
			SPDXID           string
			Name             string `json:"name"`
			LicenseConcluded string `json:"licenseConcluded"`
			LicenseDeclared  string `json:"licenseDeclared"`
			ExternalRefs     []struct {
				Locator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
		Files []struct {
			SPDXID   string
			FileName string `json:"fileName"`
		} `json:"files"`
		Relationships []struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
			Related string `json:"relatedSpdxElement"`
		} `json:"relationships"`
	}
	if err := json.Unmarshal(spdx, &doc); err != nil {
		t.Fatal(err)
	}
	var pkgID string
	for _, p := range doc.Packages {
		if p.Name == "libseccomp-dev" {
			pkgID = p.SPDXID
			if p.LicenseConcluded != "LGPL-2.1-only" || p.LicenseDeclared != "LGPL-2.1-only" || len(p.ExternalRefs) != 1 || p.ExternalRefs[0].Locator != purl {
				t.Errorf("SPDX: libseccomp-dev is %+v, want %s under LGPL-2.1-only", p, purl)
			}
		}
	}
	fileID := map[string]string{}
	for _, f := range doc.Files {
		fileID[f.FileName] = f.SPDXID
	}
	depends := func(file string) bool {
		return slices.ContainsFunc(doc.Relationships, func(r struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
			Related string `json:"relatedSpdxElement"`
		}) bool {
			return r.Element == fileID[file] && r.Type == "DEPENDS_ON" && r.Related == pkgID
		})
	}
	if pkgID == "" || !depends("./static/seccomp") || depends("./dynamic/seccomp") {
		t.Errorf("SPDX: libseccomp-dev (%q) is not what ./static/seccomp alone depends on:\n%s", pkgID, spdx)
	}
	cdx := readSBOM(t, docs, "*.cdx.json")
	if !strings.Contains(string(cdx), `"purl": "`+purl+`"`) && !strings.Contains(string(cdx), `"purl":"`+purl+`"`) {
		t.Errorf("CycloneDX: no component %s:\n%s", purl, cdx)
	}

	// From the cache: the same files, record and documents.
	out2 := filepath.Join(t.TempDir(), "out")
	docs2 := filepath.Join(t.TempDir(), "docs")
	log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--sbom", "--sbom-dir", docs2, "--cache-dir", cache, "-o", "oci:"+out2)
	if !strings.Contains(log, "cached") {
		t.Errorf("the second build was not taken from the cache:\n%s", log)
	}
	if got := readImageFiles(t, out2, "linux/amd64"); !mapsEqual(got, files) {
		t.Error("a build from the cache placed other files")
	}
	if got := readSBOM(t, docs2, "*.spdx.json"); string(got) != string(spdx) {
		t.Error("a build from the cache wrote another SPDX document")
	}
}

type clibsLibrary = clibs.Library

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// readSBOM reads the one document of dir matching pattern.
func readSBOM(t *testing.T, dir, pattern string) []byte {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(names) != 1 {
		t.Fatalf("documents %s in %s: %v", pattern, dir, names)
	}
	data, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// osRelease is the build machine's distro as a purl's qualifier says it
// (debian-12).
func osRelease(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = strings.Trim(v, `"`)
		}
	}
	return vals["ID"] + "-" + vals["VERSION_ID"]
}

// Cross-compiled for arm64, the static binary contains the arm64
// libseccomp.a of Debian's multiarch package (libseccomp-dev:arm64), and
// the cross toolchain's C library: credited by their own packages.
func TestCgoLibraryLicencesArm64(t *testing.T) {
	needTool(t, "aarch64-linux-gnu-gcc")
	needTool(t, "pkg-config")
	needTool(t, "dpkg-query")
	needFile(t, "/usr/lib/aarch64-linux-gnu/libseccomp.a", "libseccomp-dev:arm64")
	recipe := seccompRecipe(t, "linux/arm64")
	out := filepath.Join(t.TempDir(), "out")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", recipe, "--sbom", "--sbom-dir", docs, "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	files := readImageFiles(t, out, "linux/arm64")
	if _, ok := files["LICENSES/static/debian/libseccomp-dev/copyright"]; !ok {
		t.Error("static: no copyright file of libseccomp-dev")
	}
	if _, ok := files["LICENSES/dynamic/debian/libseccomp-dev/copyright"]; ok {
		t.Error("dynamic: libseccomp-dev's copyright file shipped, but the binary does not contain it")
	}
	version := dpkgVersion(t, "libseccomp-dev:arm64")
	purl := "pkg:deb/debian/libseccomp-dev@" + strings.ReplaceAll(version, "+", "%2B") + "?arch=arm64&distro=" + osRelease(t) + "&upstream=libseccomp"
	spdx := readSBOM(t, docs, "*.spdx.json")
	if !strings.Contains(string(spdx), `"referenceLocator": "`+purl+`"`) {
		t.Errorf("SPDX: no package %s:\n%s", purl, spdx)
	}
	// The cross toolchain's C library is built from another source
	// package than glibc, at its own version: upstream says both.
	q, err := exec.Command("dpkg-query", "-W", "-f=${Version} ${source:Package}@${source:Version}", "libc6-dev-arm64-cross").Output()
	if err != nil {
		t.Fatalf("dpkg-query libc6-dev-arm64-cross: %v", err)
	}
	cversion, upstream, _ := strings.Cut(string(q), " ")
	cross := "pkg:deb/debian/libc6-dev-arm64-cross@" + strings.ReplaceAll(cversion, "+", "%2B") + "?arch=all&distro=" + osRelease(t) + "&upstream=" + strings.NewReplacer("@", "%40", "+", "%2B").Replace(upstream)
	if !strings.Contains(string(spdx), `"referenceLocator": "`+cross+`"`) {
		t.Errorf("SPDX: no package %s:\n%s", cross, spdx)
	}
	rec := readRecord(t, out+".record.json")
	for _, a := range rec.Artifacts {
		if a.Name != "static" {
			continue
		}
		if !slices.ContainsFunc(a.GoBinaries[0].CLibraries, func(l clibs.Library) bool {
			return l.Package.Name == "libseccomp-dev" && l.Arch == "arm64" && strings.HasPrefix(l.File, "/usr/lib/aarch64-linux-gnu/")
		}) {
			t.Errorf("static: the record says %+v", a.GoBinaries[0].CLibraries)
		}
	}
}

// A library linked from a directory no package owns (a /usr/local/lib,
// here one of the test's) has no known licence: a warning naming the file
// and the recipe's line, an error with --require-licenses. An archive the
// module's own source carries is under the module's licence: recorded,
// not warned of.
func TestCgoLibraryWithoutPackage(t *testing.T) {
	cc := needTool(t, "gcc")
	ar := needTool(t, "ar")
	dir := t.TempDir()
	archive := func(libDir, name, returns string) {
		t.Helper()
		writeFile(t, filepath.Join(libDir, name+".c"), "int "+name+"(void) { return "+returns+"; }\n")
		if out, err := exec.Command(cc, "-c", "-o", filepath.Join(libDir, name+".o"), filepath.Join(libDir, name+".c")).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if out, err := exec.Command(ar, "rcs", filepath.Join(libDir, "lib"+name+".a"), filepath.Join(libDir, name+".o")).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	local := filepath.Join(dir, "usr-local", "lib")
	archive(local, "foo", "1")
	archive(filepath.Join(dir, "app", "third_party"), "bar", "1")
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/foo\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), `package main

// #cgo LDFLAGS: -L`+local+` -lfoo -L${SRCDIR}/third_party -lbar
// int foo(void);
// int bar(void);
import "C"

func main() { println(C.foo() + C.bar()) }
`)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  foo:
    go: {module: app, packages: ., cgo: true}
    licenses: none
images:
  foo:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: foo, dest: /bin/}
`)
	out := filepath.Join(t.TempDir(), "out")
	cache := t.TempDir()
	log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+out)
	libfoo := filepath.Join(local, "libfoo.a")
	if real, err := filepath.EvalSymlinks(libfoo); err == nil {
		libfoo = real
	}
	want := recipe + ":4:5: artifact foo (linux/amd64, go): cgo links C libraries whose licence is not known: " + libfoo + " (-lfoo, in foo) is owned by no Debian package"
	if !strings.Contains(log, want) {
		t.Errorf("no warning %q:\n%s", want, log)
	}
	if strings.Contains(log, "libbar.a") {
		t.Errorf("warned of the module's own archive:\n%s", log)
	}
	rec := readRecord(t, out+".record.json")
	libs := rec.Artifacts[0].GoBinaries[0].CLibraries
	if !slices.ContainsFunc(libs, func(l clibs.Library) bool { return l.InModule && l.File == "third_party/libbar.a" }) ||
		!slices.ContainsFunc(libs, func(l clibs.Library) bool { return l.File == libfoo && l.Package.Name == "" }) {
		t.Errorf("the record says %+v", libs)
	}
	_, err := pallet(t, "build", "-q", "-f", recipe, "--require-licenses", "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil || !strings.Contains(err.Error(), "is owned by no Debian package") || !strings.Contains(err.Error(), "licences are required") {
		t.Errorf("--require-licenses: %v", err)
	}

	// No package version tells that libfoo.a changed: its digest does.
	// Unchanged, the build is the cache's; rebuilt with another foo(),
	// the cached binary, which contains the old one, is not taken.
	again := filepath.Join(t.TempDir(), "out")
	if log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+again); !strings.Contains(log, "[go, cached]") {
		t.Errorf("an unchanged rebuild was not the cache's:\n%s", log)
	}
	archive(local, "foo", "2")
	log = mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+again)
	if strings.Contains(log, "[go, cached]") || !strings.Contains(log, libfoo+", owned by no package, changed since") {
		t.Errorf("the cached build that contains the old %s was taken, or not said why not:\n%s", libfoo, log)
	}
	if slices.Equal(layoutDigests(t, out), layoutDigests(t, again)) {
		t.Error("the image with the new libfoo.a is the old one")
	}
}
