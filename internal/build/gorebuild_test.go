package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/output"
)

// stubGo puts first on PATH a go command that is a Go release of its own
// (its GOROOT holds it, a VERSION and Go's LICENSE): go env answers as it
// would, and go build in src/<name> copies what the real go built there
// for linux/$GOARCH; every run is logged, a line each, to the file
// returned.
func stubGo(t *testing.T, src string, names ...string) (log string) {
	t.Helper()
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	built := filepath.Join(dir, "built")
	for _, name := range names {
		for _, arch := range []string{"amd64", "arm64"} {
			cmd := exec.Command(real, "build", "-o", filepath.Join(built, name+"-"+arch), ".")
			cmd.Dir = filepath.Join(src, name)
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
		}
	}
	version := goVersionIn(t, dir)
	root, log := fakeToolchain(t, dir, version, "")
	// fakeToolchain's go answers go env; this one builds too.
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\ncase $1 in\n" +
		"env) shift; for n; do case $n in\n" +
		"GOROOT) echo " + root + ";;\nGOVERSION) echo " + version + ";;\nGOMODCACHE) echo " + filepath.Join(dir, "mod") + ";;\n" +
		"GOTOOLCHAIN) echo local;;\nGOWORK) echo off;;\nGOMOD) echo \"$PWD/go.mod\";;\n*) exit 2;;\nesac; done;;\n" +
		"build) mkdir -p \"$3\" && cp " + built + "/\"$(basename \"$PWD\")-$GOARCH\" \"$3/$(basename \"$PWD\")\";;\n*) exit 2;;\nesac\n"
	if err := os.WriteFile(filepath.Join(root, "bin", "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// A rebuild of a recipe of Go programs that finds them all in the cache
// runs no go command: not go env for their toolchain's licence, its
// module cache or the toolchain check, nor go build. The first rebuild
// too: it ran go env GOROOT GOVERSION for the licence, which the build
// before had from its own go build but did not keep.
func TestNoOpRebuildRunsNoGo(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in go command is a shell script")
	}
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a/go.mod":  "module example.com/a\n\ngo 1.22\n",
		"a/main.go": "package main\n\nfunc main() {}\n",
		"b/go.mod":  "module example.com/b\n\ngo 1.22\n",
		"b/main.go": "package main\n\nfunc main() {}\n",
		"pallet.yaml": `version: 1
artifacts:
  a:
    go: {module: a, packages: [.]}
    licenses: none
  b:
    go: {module: b, packages: [.]}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: a, dest: /bin/}
      - {artifact: b, dest: /bin/}
`,
	})
	log := stubGo(t, dir, "a", "b")
	// The memo keeps facts only of files left alone long enough (2 s)
	// that a change could not keep their stamp: the go command's among
	// them.
	time.Sleep(2100 * time.Millisecond)
	p, out := recipePlan(t, dir), ociLayout(t, filepath.Join(dir, "out"))
	// Offline, from a mirror, and offline without one, which serves
	// modules from the go command's own module cache: go env GOMODCACHE
	// says where, and a rebuild asks it only when the go command, or what
	// its answer is made of, changed.
	mirror := t.TempDir()
	for _, offline := range []string{"", mirror, "module cache"} {
		cacheDir := t.TempDir()
		for i := range 3 {
			before := asked(t, log)
			opt := Options{Outputs: []output.Target{out}, CacheDir: cacheDir, Progress: quietReporter(t), ModuleLicenses: true}
			switch offline {
			case "":
			case mirror:
				opt.Network.Offline, opt.Network.Mirror = true, mirror
			default:
				opt.Network.Offline = true
			}
			if _, err := Run(t.Context(), p, opt); err != nil {
				t.Fatal(err)
			}
			ran := asked(t, log) - before
			if i == 0 && ran == 0 {
				t.Fatalf("offline %q: the first build ran no go command", offline)
			}
			if i > 0 && ran != 0 {
				data, _ := os.ReadFile(log)
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				t.Errorf("offline %q: rebuild %d ran %d go commands: %q", offline, i, ran, lines[len(lines)-ran:])
			}
		}
	}
}
