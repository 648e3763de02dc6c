package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refusedAt runs pallet build of the recipe src (with a file f.txt beside
// it) and wants it refused with an error holding each of wants, and no
// output written.
func refusedAt(t *testing.T, src string, args []string, wants ...string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "hi\n")
	file := filepath.Join(dir, "pallet.yaml")
	writeFile(t, file, src)
	out := filepath.Join(dir, "out")
	_, err := pallet(t, append([]string{"build", "-q", "--offline", "--cache-dir", filepath.Join(dir, "cache"), "-f", file, "-o", "oci:" + out}, args...)...)
	for _, w := range wants {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("got %v, want an error containing %q", err, w)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("output written by a refused build")
	}
}

// A placement whose platforms name none of the image's built an image
// with no layers, the file placed nowhere; it is refused at its line, as
// a config.for key is, naming the image's platforms and the one meant.
func TestRecipeSlipPlacementOnNoPlatform(t *testing.T) {
	const recipe = `version: 1
artifacts:
  f:
    local: {path: ./f.txt}
    licenses: none
images:
  x:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    config:
      for:
        linux/arm64: {cmd: [/f.txt]}
    files:
      - {artifact: f, dest: /f.txt, platforms: [PLACED]}
`
	refusedAt(t, strings.Replace(recipe, "PLACED", "windows", 1), nil,
		"pallet.yaml:14:", "image x: files[0] (f): platforms entry windows names none of the image's platforms (linux/amd64, linux/arm64)")
	refusedAt(t, strings.Replace(recipe, "PLACED", "linux/arm", 1), nil,
		"pallet.yaml:14:", "platforms entry linux/arm names none of the image's platforms (linux/amd64, linux/arm64) (did you mean linux/arm64?)")
}

// Another tool's name of a platform, or a slip, is refused with the
// platform meant: in a recipe, in --platform and in a Dockerfile build's
// --platform alike.
func TestRecipeSlipPlatformAlias(t *testing.T) {
	const recipe = `version: 1
artifacts:
  f:
    local: {path: ./f.txt}
    licenses: none
images:
  x:
    base: scratch
    platforms: [PLATFORM]
    files:
      - {artifact: f, dest: /f.txt}
`
	for written, meant := range map[string]string{"linux/aarch64": "linux/arm64", "linux/x86_64": "linux/amd64", "windows/x64": "windows/amd64", "linux/armhf": "linux/arm/v7"} {
		refusedAt(t, strings.Replace(recipe, "PLATFORM", written, 1), nil,
			"pallet.yaml:9:", `unknown platform "`+written+`" (did you mean `+meant+`?)`)
	}
	good := strings.Replace(recipe, "PLATFORM", "linux/amd64", 1)
	for _, flag := range []string{"linux/amd46", "linux/x86_64", "linux/arm64,linux/amd46"} {
		refusedAt(t, good, []string{"--platform", flag}, `unknown platform "linux/`, "(did you mean linux/amd64?)")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "hi\n")
	df := filepath.Join(dir, "Dockerfile")
	writeFile(t, df, "FROM scratch\nCOPY f.txt /f.txt\n")
	_, err := pallet(t, "build", "-q", "--offline", "-f", df, "--platform", "linux/aarch64", "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "(did you mean linux/arm64?)") {
		t.Errorf("a Dockerfile build's --platform linux/aarch64: %v", err)
	}
}

// A Go pin GOTOOLCHAIN cannot select is refused at its line before
// anything is fetched, saying what to write, where a pin before 1.21
// passed the check and failed in the build's go mod download.
func TestRecipeSlipGoToolchain(t *testing.T) {
	const recipe = `version: 1
artifacts:
  crictl:
    gomod:
      module: sigs.k8s.io/cri-tools
      version: v1.37.0
      sum: h1:BmTImEoTX3KPXCLwmIU9mfCC8umUqF4R8WibY9eVU9Y=
      packages: [./cmd/crictl]
      toolchain: TOOLCHAIN
images:
  node:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: crictl, dest: /usr/local/bin/}
`
	for written, want := range map[string]string{
		"1.3":        `go version "1.3": GOTOOLCHAIN selects only Go 1.21.0 and later, the releases the go command can download`,
		"1.20.3":     `go version "1.20.3": GOTOOLCHAIN selects only Go 1.21.0 and later`,
		`"go1.26.8"`: `go version "go1.26.8": write the release without go, "1.26.8"`,
		`"1.26"`:     `go version "1.26": Go releases from 1.21 on are named with their patch; want 1.26.0 or a later 1.26.N`,
	} {
		refusedAt(t, strings.Replace(recipe, "TOOLCHAIN", written, 1), nil, "pallet.yaml:9:", "artifact crictl: "+want)
	}
}
