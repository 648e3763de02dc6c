package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/record"
)

// TestModuleLicencesOfPlacedBinariesOnly places one of an artifact's two
// Go programs, as Antrea's image takes host-local.exe alone from the CNI
// plugins: the modules only the other one links are not in the image, so
// their licences are neither shipped nor recorded.
func TestModuleLicencesOfPlacedBinariesOnly(t *testing.T) {
	dir := t.TempDir()
	writePlugins(t, dir)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  plugins:
    go:
      module: ./src
      packages: [./cmd/host-local, ./cmd/win-bridge]
images:
  cni:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: plugins
        path: host-local
        dest: /opt/cni/bin/
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	files := readImageFiles(t, out, "linux/amd64")
	if _, ok := files["opt/cni/bin/host-local"]; !ok {
		t.Fatalf("host-local not placed: %v", files)
	}
	for name := range files {
		if strings.Contains(name, "example.com/winonly") {
			t.Errorf("the image ships %s, a licence of a module only the unplaced win-bridge links", name)
		}
	}
	var rec record.Build
	readJSON(t, out+".record.json", &rec)
	if got := recordModules(&rec); strings.Contains(got, "win-bridge") || !strings.Contains(got, "plugins host-local") {
		t.Errorf("record's Go binaries: want host-local alone, got\n%s", got)
	}
}

// writePlugins writes under dir/src a module of two programs, host-local
// and win-bridge, of which win-bridge alone links example.com/winonly/v2
// (its licence two directories below example.com, as
// github.com/cespare/xxhash/v2's is).
func writePlugins(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "src", "go.mod"), "module example.com/plugins\n\ngo 1.22\n\nrequire example.com/winonly/v2 v2.0.0\n\nreplace example.com/winonly/v2 => ../winonly\n")
	writeFile(t, filepath.Join(dir, "src", "LICENSE"), "MIT, the plugins' own\n")
	writeFile(t, filepath.Join(dir, "src", "cmd", "host-local", "main.go"), "package main\n\nfunc main() { println(\"host-local\") }\n")
	writeFile(t, filepath.Join(dir, "src", "cmd", "win-bridge", "main.go"), "package main\n\nimport \"example.com/winonly/v2\"\n\nfunc main() { println(winonly.Name) }\n")
	writeFile(t, filepath.Join(dir, "winonly", "go.mod"), "module example.com/winonly/v2\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "winonly", "LICENSE"), "BSD, the dependency's\n")
	writeFile(t, filepath.Join(dir, "winonly", "winonly.go"), "package winonly\n\n// Name is linked by win-bridge only.\nconst Name = \"win-bridge\"\n\nvar Used = []string{Name}\n")
}

// cniAndNode is a recipe of two images: cni places host-local alone of
// the plugins (as Antrea's image does), node places them all.
const cniAndNode = `version: 1
artifacts:
  plugins:
    go:
      module: ./src
      packages: [./cmd/host-local, ./cmd/win-bridge]
images:
  cni:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: plugins
        path: host-local
        dest: /opt/cni/bin/
  node:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: plugins
        dest: /opt/cni/bin/
`

// TestModuleLicencesOfPlacementNotOfBuild builds Antrea's image, which
// takes host-local.exe alone from the CNI plugins, beside a node image
// that places all of them: the first ships no licence of what only
// win-bridge links, and is the image it is when built alone. The
// artifact's licences are the union of what the build places, which is
// not what each placement places.
func TestModuleLicencesOfPlacementNotOfBuild(t *testing.T) {
	dir := t.TempDir()
	writePlugins(t, dir)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, cniAndNode)
	cache := t.TempDir()
	both := filepath.Join(dir, "both")
	digests := strings.Fields(mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+both))
	alone := strings.TrimSpace(mustPallet(t, "build", "-q", "-f", recipe, "--image", "cni", "--cache-dir", cache, "-o", "oci:"+filepath.Join(dir, "alone")))
	files := readImageFiles(t, both, "linux/amd64")
	if _, ok := files["opt/cni/bin/win-bridge"]; ok {
		t.Fatalf("the first image of the layout is not cni: %v", files)
	}
	for name := range files {
		if strings.Contains(name, "example.com/winonly") {
			t.Errorf("the cni image ships %s, a licence of a module only win-bridge links, which another image places", name)
		}
	}
	if len(digests) != 2 || digests[0] != alone {
		t.Errorf("the cni image built beside node is %v, alone %s: it must not depend on what else the build places", digests, alone)
	}
}

// TestSBOMOfPlacementWithPath: the SBOMs of an image list what it holds,
// not every file of an artifact of which a placement takes one
// (host-local, not win-bridge), nor the modules only the others link.
func TestSBOMOfPlacementWithPath(t *testing.T) {
	dir := t.TempDir()
	writePlugins(t, dir)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, cniAndNode)
	sboms := filepath.Join(dir, "sboms")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"), "--sbom", "--sbom-dir", sboms)
	for _, doc := range []string{"cni_linux-amd64.sbom.spdx.json", "cni_linux-amd64.sbom.cdx.json"} {
		data, err := os.ReadFile(filepath.Join(sboms, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, absent := range []string{"win-bridge", "winonly"} {
			if bytes.Contains(data, []byte(absent)) {
				t.Errorf("%s names %s, which the cni image does not hold", doc, absent)
			}
		}
		if !bytes.Contains(data, []byte("/opt/cni/bin/host-local")) {
			t.Errorf("%s does not name /opt/cni/bin/host-local", doc)
		}
	}
	// The node image holds both, and what win-bridge links.
	data, err := os.ReadFile(filepath.Join(sboms, "node_linux-amd64.sbom.spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, present := range []string{"/opt/cni/bin/win-bridge", "/opt/cni/bin/host-local", "LICENSES/plugins/example.com/winonly/v2/LICENSE"} {
		if !bytes.Contains(data, []byte(present)) {
			t.Errorf("node's SPDX SBOM does not name %s", present)
		}
	}
}

// An artifact with no licence file of its own is said once, by the
// artifact's warning, which says what to do; not again for each of its
// programs as a module "without a licence file": the programs' main
// module is the artifact, as an Antrea build given with --mode
// antrea=local:DIR of three programs and no LICENSE shows.
func TestMissingOwnLicenceSaidOnce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src", "go.mod"), "module example.com/own\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "src", "cmd", "a", "main.go"), "package main\n\nfunc main() { println(\"a\") }\n")
	writeFile(t, filepath.Join(dir, "src", "cmd", "b", "main.go"), "package main\n\nfunc main() { println(\"b\") }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  own:
    go:
      module: ./src
      packages: [./cmd/a, ./cmd/b]
images:
  own:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: own, dest: /bin/}
`)
	log := mustPallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if n := strings.Count(log, "warning:"); n != 1 || !strings.Contains(log, "no licence file found") {
		t.Errorf("%d warnings, want the artifact's one:\n%s", n, log)
	}
	_, err := pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--require-licenses", "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out2"))
	if err == nil || !strings.Contains(err.Error(), "no licence file found; name its licence files, or declare that it has none") {
		t.Errorf("--require-licenses: %v, want the artifact's own refusal", err)
	}
}

// The SBOM's package for an artifact declares the artifact's own licence,
// not with it those of the modules its programs link (Antrea, Apache-2.0,
// was declared "Apache-2.0 AND BSD-3-Clause" for golang.org/x/sys), which
// are packages of their own, each with its licence; so what it declares
// does not depend on --module-licenses either.
func TestSBOMDeclaresTheArtifactsOwnLicence(t *testing.T) {
	apache, err := os.ReadFile(filepath.Join("..", "..", "examples", "kind-base", "modules", "Apache-2.0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "lib", "go.mod"), "module example.com/lib\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\n// Name is linked by app.\nconst Name = \"lib\"\n\nvar Used = []string{Name}\n")
	writeFile(t, filepath.Join(dir, "lib", "LICENSE"), string(apache))
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ../lib\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nimport \"example.com/lib\"\n\nfunc main() { println(lib.Used[0]) }\n")
	writeFile(t, filepath.Join(dir, "app", "LICENSE"), mitLicense)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: .}
images:
  image:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /bin/}
`)
	for _, extra := range []string{"--module-licenses=true", "--module-licenses=false"} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--sbom", extra, "--cache-dir", t.TempDir(), "-o", "oci:"+out)
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"sbom", "oci:" + out, "--format", "spdx-json"}, &stdout, &stderr); err != nil {
			t.Fatalf("pallet sbom: %v\n%s", err, stderr.String())
		}
		var doc struct {
			Packages []struct {
				Name, LicenseDeclared, LicenseConcluded string
			}
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range doc.Packages {
			if p.Name == "app" {
				found = true
				if p.LicenseDeclared != "MIT" || p.LicenseConcluded != "MIT" {
					t.Errorf("%s: artifact app declared %q, concluded %q, want its own MIT", extra, p.LicenseDeclared, p.LicenseConcluded)
				}
			}
			if p.Name == "example.com/lib" && p.LicenseConcluded != "Apache-2.0" {
				t.Errorf("%s: module example.com/lib concluded %q, want Apache-2.0", extra, p.LicenseConcluded)
			}
		}
		if !found {
			t.Errorf("%s: no package for artifact app in %s", extra, stdout.String())
		}
	}
}

// A release binary that names its main module by version (go install
// module@version, as many upstream releases are built) has its licence
// from that module, proven by the sum it records: the artifact is not
// unlicensed, even with --require-licenses, and the licence is shipped
// under the module's path.
func TestReleaseBinaryLicensedByItsMainModule(t *testing.T) {
	gomodProxy(t)
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", gomodPath+"/cmd/hello@v1.0.0")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(gobin, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "hello"), string(data))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  hello:
    local: {path: hello}
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: hello, dest: /usr/bin/}
`)
	out := filepath.Join(dir, "out")
	log, err := pallet(t, "build", "--progress", "plain", "--require-licenses", "-f", recipe, "-o", "oci:"+out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if strings.Contains(log, "no licence file found") {
		t.Errorf("warned of no licence:\n%s", log)
	}
	if got := readImageFiles(t, out, "linux/amd64")["LICENSES/hello/"+gomodPath+"/LICENSE"]; got != "MIT, for the test\n (644)" {
		t.Errorf("the main module's licence in the image: %q", got)
	}
}

// An artifact without a licence is warned of once, not once per
// platform it is fetched for, naming every platform that has none in the
// plan's order: it named whichever platform was ready first. A platform
// whose files hold a licence is not named. --require-licenses' refusal
// names them so too.
func TestNoLicenceWarnedOncePerArtifact(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range []string{"amd64", "arm64", "riscv64", "s390x"} {
		writeFile(t, filepath.Join(dir, arch, "f"), arch+"\n")
	}
	writeFile(t, filepath.Join(dir, "arm64", "LICENSE"), mitLicense)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  f:
    local: {path: "{{arch}}"}
images:
  app:
    base: scratch
    platforms: [linux/s390x, linux/riscv64, linux/arm64, linux/amd64]
    files:
      - {artifact: f, dest: /etc/}
`)
	log, err := pallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	want := "artifact f (linux/amd64, linux/riscv64 and linux/s390x, local): no licence file found"
	if n := strings.Count(log, "no licence file found"); n != 1 || !strings.Contains(log, want) {
		t.Errorf("warned %d times, want once: %q:\n%s", n, want, log)
	}
	// --require-licenses refuses it so, naming them all.
	_, err = pallet(t, "build", "--require-licenses", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out2"))
	if err == nil || !strings.Contains(err.Error(), want+"; name its licence files, or declare that it has none (licenses: none); licences are required") {
		t.Errorf("--require-licenses: %v, want %q", err, want)
	}
}

// TestSBOMOfLayoutImageByName reads an image's SBOM back from a layout of
// two images sharing a tag, where each entry is named repository:tag:
// by the full name (a colon in the reference, as inspect takes it), and
// not by a tag or no name, which would be either image.
func TestSBOMOfLayoutImageByName(t *testing.T) {
	dir := t.TempDir()
	writePlugins(t, dir)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, cniAndNode)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+out, "--sbom")
	doc := mustPallet(t, "sbom", "oci:"+out+":node:latest")
	if !strings.Contains(doc, "/opt/cni/bin/win-bridge") {
		t.Errorf("oci:OUT:node:latest is not node's SBOM:\n%.300s", doc)
	}
	if doc := mustPallet(t, "sbom", "oci:"+out+":cni:latest"); strings.Contains(doc, "win-bridge") {
		t.Errorf("oci:OUT:cni:latest is not cni's SBOM:\n%.300s", doc)
	}
	for _, ref := range []string{"oci:" + out + ":latest", "oci:" + out} {
		got, err := pallet(t, "sbom", ref)
		if err == nil || !strings.Contains(err.Error(), "cni:latest") || !strings.Contains(err.Error(), "node:latest") {
			t.Errorf("pallet sbom %s: want an error naming both images, got %v:\n%.300s", ref, err, got)
		}
	}
}

// An image that takes two binaries of an artifact by their paths ships
// the licences of the modules either links: the first placement ships
// the artifact's licences, for both, as the image's SBOM lists them.
func TestModuleLicencesOfTwoPathPlacements(t *testing.T) {
	dir := t.TempDir()
	writePlugins(t, dir)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  plugins:
    go:
      module: ./src
      packages: [./cmd/host-local, ./cmd/win-bridge]
images:
  cni:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: plugins, path: host-local, dest: /opt/cni/bin/}
      - {artifact: plugins, path: win-bridge, dest: /opt/cni/bin/}
`)
	sboms := filepath.Join(dir, "sboms")
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+out, "--sbom", "--sbom-dir", sboms)
	files := readImageFiles(t, out, "linux/amd64")
	const lic = "LICENSES/plugins/example.com/winonly/v2/LICENSE"
	if _, ok := files[lic]; !ok {
		t.Errorf("the image places win-bridge without the licence of the module it links (%s)", lic)
	}
	data, err := os.ReadFile(filepath.Join(sboms, "cni_linux-amd64.sbom.spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(lic)) {
		t.Errorf("the SBOM does not name %s", lic)
	}
}
