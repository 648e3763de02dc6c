package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The standard library every Go binary links is under the Go
// toolchain's licence: the build ships the LICENSE of the toolchain it
// ran, byte for byte, once beside the modules' licences of each
// artifact, however many binaries it has, and the record names it.
func TestGoToolchainLicenseShipped(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "cmd", "one", "main.go"), "package main\n\nfunc main() { println(1) }\n")
	writeFile(t, filepath.Join(dir, "app", "cmd", "two", "main.go"), "package main\n\nfunc main() { println(2) }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: [./cmd/one, ./cmd/two]}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--sbom", "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	goroot, version, want := hostGoLicense(t)
	files := readImageFiles(t, out, "linux/amd64")
	p := "LICENSES/app/std@" + version + "/LICENSE"
	if got := files[p]; got != fmt.Sprintf("%s (644)", want) {
		t.Errorf("%s: %q, want %s/LICENSE", p, got, goroot)
	}
	n := 0
	for f := range files {
		if strings.HasPrefix(f, "LICENSES/") && strings.HasSuffix(f, "/LICENSE") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d licence files shipped, want Go's once: %v", n, files)
	}
	rec := readRecord(t, out+".record.json")
	if gbs := rec.Artifacts[0].GoBinaries; len(gbs) != 2 || gbs[0].GoLicense != "std@"+version+"/LICENSE" || gbs[1].GoLicense != gbs[0].GoLicense {
		t.Errorf("the record's Go binaries do not name the licence: %+v", gbs)
	}
	// The SBOM lists it with the licence files.
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"sbom", "oci:" + out, "--format", "spdx-json"}, &stdout, &stderr); err != nil {
		t.Fatalf("pallet sbom: %v\n%s", err, stderr.String())
	}
	var doc struct{ Files []struct{ FileName string } }
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(doc.Files, func(f struct{ FileName string }) bool { return strings.HasSuffix(f.FileName, "/"+p) }) {
		t.Errorf("the SBOM lists no /%s: %s", p, stdout.String())
	}
	// Without module licences, none.
	out = filepath.Join(dir, "out2")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--module-licenses=false", "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	if files := readImageFiles(t, out, "linux/amd64"); files[p] != "" {
		t.Errorf("shipped without module licences")
	}
	// A binary pallet did not build was built by another's Go, whose
	// licence is not at hand; the one running here would make the image
	// depend on the build machine's Go.
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "one"), "./cmd/one")
	build.Dir = filepath.Join(dir, "app")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	writeFile(t, filepath.Join(dir, "prebuilt.yaml"), `version: 1
artifacts:
  app:
    local: {path: bin}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	out = filepath.Join(dir, "out3")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "prebuilt.yaml"), "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	for f := range readImageFiles(t, out, "linux/amd64") {
		if strings.Contains(f, "/std@") {
			t.Errorf("a prebuilt binary's image ships %s", f)
		}
	}
}

// The licence shipped is that of the toolchain that built the binaries,
// labelled with its version: the go command picks it in the module (its
// go and toolchain lines, under GOTOOLCHAIN=<min>+auto), not in an empty
// directory.
func TestGoToolchainLicenseOfTheBuildingToolchain(t *testing.T) {
	env, err := exec.Command("go", "env", "GOVERSION", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	host, modcache, _ := strings.Cut(strings.TrimSpace(string(env)), "\n")
	// An older toolchain this machine has: no download.
	const older = "go1.25.5"
	if _, err := os.Stat(filepath.Join(modcache, "golang.org", "toolchain@v0.0.1-"+older+".linux-amd64", "LICENSE")); err != nil || host == older {
		t.Skipf("no %s toolchain in the module cache: %v", older, err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n\ntoolchain "+host+"\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nfunc main() { println(1) }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: [.], env: [GOTOOLCHAIN=`+older+`+auto]}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	rec := readRecord(t, out+".record.json")
	gbs := rec.Artifacts[0].GoBinaries
	if len(gbs) != 1 || gbs[0].GoVersion != host || gbs[0].GoLicense != "std@"+host+"/LICENSE" {
		t.Errorf("the binary, built by %s, names the licence of: %+v", host, gbs)
	}
	for f := range readImageFiles(t, out, "linux/amd64") {
		if strings.HasSuffix(f, "/LICENSE") && strings.Contains(f, "/std@") && f != "LICENSES/app/std@"+host+"/LICENSE" {
			t.Errorf("ships %s, not %s's", f, host)
		}
	}
}

// The toolchain's licence of a binary built in this run is read from the
// GOROOT go env gave beside the build: no go command runs between the
// build and its layer (go env took some 30 ms there, on the critical path
// of every Go image). A binary from the cache, built by an earlier run,
// asks go env for it, and ships the same licence.
func TestGoLicenceAsksNoGoAfterTheBuild(t *testing.T) {
	goroot, version, want := hostGoLicense(t)
	log := logGoCalls(t)
	dir, cache := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nfunc main() { println(1) }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: [.]}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	goEnvCalls := func() []string {
		t.Helper()
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		var calls []string
		for l := range strings.Lines(string(data)) {
			if strings.HasPrefix(l, "env ") {
				calls = append(calls, strings.TrimSpace(l))
			}
		}
		if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
		return calls
	}
	p := "LICENSES/app/std@" + version + "/LICENSE"
	for _, c := range []struct {
		name string
		envs int
	}{{"built", 1}, {"from the cache", 1}} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
		if calls := goEnvCalls(); len(calls) != c.envs {
			t.Errorf("%s: %d go env calls, want %d: %q", c.name, len(calls), c.envs, calls)
		}
		if got := readImageFiles(t, out, "linux/amd64")[p]; got != fmt.Sprintf("%s (644)", want) {
			t.Errorf("%s: %s: %q, want %s/LICENSE", c.name, p, got, goroot)
		}
	}
}

// hostGoLicense is the Go on PATH: its GOROOT, its version and its
// LICENSE, which a build by it ships.
func hostGoLicense(t *testing.T) (goroot, version string, license []byte) {
	t.Helper()
	env, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	goroot, version, _ = strings.Cut(strings.TrimSpace(string(env)), "\n")
	if license, err = os.ReadFile(filepath.Join(goroot, "LICENSE")); err != nil {
		t.Fatal(err)
	}
	return goroot, version, license
}
