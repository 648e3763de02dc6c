package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// A mistyped flag is refused before any work, with a message that says
// what was expected.
func TestFlagErrors(t *testing.T) {
	recipe := copyExample(t, "hello")
	layoutDir := t.TempDir()
	modesFile := filepath.Join(t.TempDir(), "modes.yaml")
	if err := os.WriteFile(modesFile, []byte("# CI\nhello: release\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(t.TempDir(), "twice.yaml")
	if err := os.WriteFile(twice, []byte("hello: release\nhello: local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A syntax error is at its line, as in the recipe, not yaml.v3's
	// "yaml: line 2: ..." after the file's name.
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, []byte("other: release\nhello: [release\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"compression", []string{"--compression", "lz4"}, `--compression: unknown compression "lz4": want gzip or zstd`},
		{"jobs", []string{"--jobs", "-1"}, "--jobs -1: want 0 (one per CPU) or more"},
		{"cache-to without prefix", []string{"--cache-to", "localhost:5000/cache:main"}, `--cache-to "localhost:5000/cache:main": want registry:REF`},
		{"cache-from a layout", []string{"--cache-from", "oci:" + layoutDir}, "--cache-from \"oci:" + layoutDir + "\": want registry:REF"},
		{"cache-from bad reference", []string{"--cache-from", "registry:Not A Ref"}, `--cache-from "registry:Not A Ref"`},
		{"cache without cache", []string{"--no-cache", "--cache-to", "registry:localhost:5000/c:1"}, "--cache-from and --cache-to need the local cache"},
		{"mirror-url", []string{"--mirror-url", "mirror.internal/pallet"}, `--mirror-url "mirror.internal/pallet": want an http(s) URL`},
		{"offline with a mirror URL", []string{"--offline", "--mirror-url", "http://127.0.0.1:1/pallet"}, "--offline reaches no mirror URL"},
		{"output kind", []string{"-o", "tar:x.tar"}, "tar:x.tar"},
		{"platform", []string{"--platform", "linux/amd46"}, `unknown platform "linux/amd46"`},
		{"arg", []string{"--arg", "VERSION"}, `--arg "VERSION": want K=V`},
		// A value of a megabyte is not said again whole.
		{"arg long", []string{"--arg", strings.Repeat("V", 1<<20)}, `--arg "` + strings.Repeat("V", 80) + `"... (1048576 bytes): want K=V`},
		{"mode long", []string{"--mode", strings.Repeat("m", 1<<20)}, `--mode "` + strings.Repeat("m", 80) + `"... (1048576 bytes): want NAME=MODE`},
		{"max-download", []string{"--max-download", "lots"}, `--max-download: "lots": want a positive size`},
		{"max-download overflow", []string{"--max-download", "9000000000TiB"}, `want a positive size`},
		{"stall", []string{"--stall-timeout", "-1s"}, "--stall-timeout -1s: want a positive duration"},
		// Given, 0 was taken for the flag unset, and the recipe's
		// limits.stall won over it.
		{"stall zero", []string{"--stall-timeout", "0s"}, "--stall-timeout 0s: want a positive duration"},
		// -q replaces the mode; a typo in it is still said.
		{"progress with -q", []string{"--progress", "fancy"}, `--progress "fancy": want auto, tty, plain, json or quiet`},
		// A recipe named as docker build names its context, or a value of
		// --sbom without =, is said to be so, not taken for a subcommand.
		{"recipe as an argument", []string{"pallet.yaml"}, `pallet build takes no arguments, and got "pallet.yaml": name the file to read with -f FILE`},
		{"sbom value without =", []string{"--sbom", "none"}, `a value of --sbom follows = (--sbom=none)`},
		// Flags that qualify documents are refused alone, where they did nothing.
		{"provenance-timestamps alone", []string{"--provenance-timestamps"}, "--provenance-timestamps needs --provenance"},
		{"provenance-timestamps with sbom", []string{"--sbom", "--provenance-timestamps"}, "--provenance-timestamps needs --provenance"},
		{"attest-index alone", []string{"--attest-index"}, "--attest-index needs --sbom or --provenance"},
		{"sbom-dir alone", []string{"--sbom-dir", layoutDir + "/docs"}, "--sbom-dir needs --sbom or --provenance"},
		{"output twice", []string{"-o", "oci:" + layoutDir + "/same", "-o", "oci:" + layoutDir + "/same"}, "same"},
		{"record on an output", []string{"-o", "docker:" + layoutDir + "/x.tar", "--record", layoutDir + "/x.tar"}, "x.tar"},
		// A file that never ends is read up to its bound, not into memory.
		{"modes file choice", []string{"--modes", modesFile}, modesFile + ":2: mode choice hello: artifact hello has no modes"},
		{"modes file without end", []string{"--modes", "/dev/zero"}, "read /dev/zero: over 4194304 bytes"},
		// A second choice of one artifact is not taken silently.
		{"modes file choosing twice", []string{"--modes", twice}, twice + ":2: hello: chosen again (first at line 1)"},
		{"modes file syntax", []string{"--modes", broken}, broken + ":2: did not find expected ',' or ']'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, err := pallet(t, append([]string{"build", "-q", "-f", recipe, "-o", "oci:" + out}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("output written by a refused build")
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "512MiB": 512 << 20, "16GiB": 16 << 30, "2 GB": 2e9, "10B": 10} {
		if got, err := recipe.ParseSize(in); err != nil || got != want {
			t.Errorf("recipe.ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-5MiB", "1.5GiB", "GiB", "9223372036854775807KiB"} {
		if _, err := recipe.ParseSize(bad); err == nil {
			t.Errorf("recipe.ParseSize(%q) accepted", bad)
		}
	}
}

// inspect refuses a bare path, which would otherwise be looked up as an
// image on Docker Hub.
func TestInspectBarePath(t *testing.T) {
	dir := t.TempDir()
	_, err := pallet(t, "inspect", dir)
	if err == nil || !strings.Contains(err.Error(), "did you mean oci:"+dir+"?") {
		t.Errorf("inspect of a bare directory: %v", err)
	}
	f := filepath.Join(dir, "image.tar")
	writeFile(t, f, "")
	_, err = pallet(t, "inspect", f)
	if err == nil || !strings.Contains(err.Error(), "did you mean docker:"+f+"?") {
		t.Errorf("inspect of a bare file: %v", err)
	}
}

// A cache export that fails after the images are written leaves the build
// record beside them and says that only the export failed.
func TestCacheExportFailureKeepsRecord(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "read-only registry", http.StatusForbidden)
	}))
	defer refusing.Close()
	host := strings.TrimPrefix(refusing.URL, "http://")
	out := filepath.Join(t.TempDir(), "out")
	_, err := pallet(t, "build", "-q", "-f", copyExample(t, "hello"), "-o", "oci:"+out, "--cache-dir", t.TempDir(), "--cache-to", "registry:"+host+"/ci/cache:main")
	if err == nil || !strings.Contains(err.Error(), "images are built and written, but the cache export failed") {
		t.Fatalf("got %v", err)
	}
	if len(layoutIndex(t, out).Manifests) == 0 {
		t.Error("no images in the output")
	}
	readRecord(t, out+".record.json")
}

// -o oci:DIR replaces an earlier layout, never a directory of the user's.
func TestLayoutOutputSparesOtherDirectories(t *testing.T) {
	recipe := copyExample(t, "hello")
	dir := filepath.Join(t.TempDir(), "precious")
	writeFile(t, filepath.Join(dir, "notes.txt"), "keep me")
	_, err := pallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+dir)
	if err == nil || !strings.Contains(err.Error(), "notes.txt, which is not part of an OCI image layout") {
		t.Errorf("got %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "keep me" {
		t.Errorf("the user's file is gone or changed: %q %v", b, err)
	}
	// An earlier layout is replaced, whole.
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+out)
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/arm64", "-o", "oci:"+out)
	// The second build has one platform: a manifest per tag, not an index.
	if idx := layoutIndex(t, out); len(idx.Manifests) != 2 || idx.Manifests[0].MediaType.IsIndex() {
		t.Errorf("second build's layout: %+v", idx.Manifests)
	}
	if cf, err := layoutImage(t, out, "linux/arm64").ConfigFile(); err != nil || cf.Architecture != "arm64" {
		t.Errorf("second build's image: %v %v", cf, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 2 { // out and its record
		t.Errorf("left beside the output: %v", entries)
	}
}

// When a later output fails, the first one and its record still agree.
func TestRecordMatchesFirstOutput(t *testing.T) {
	recipe := copyExample(t, "hello")
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+out)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusForbidden)
	}))
	defer refusing.Close()
	_, err := pallet(t, "build", "-q", "-f", recipe, "--arg", "VERSION=0.2.0", "-o", "oci:"+out, "-o", "registry:"+strings.TrimPrefix(refusing.URL, "http://")+"/x/hello")
	if err == nil {
		t.Fatal("a push to a refusing registry succeeded")
	}
	rec := readRecord(t, out+".record.json")
	idx := layoutIndex(t, out)
	got := map[string]bool{}
	for _, im := range rec.Images {
		got[im.Digest] = true
	}
	img := layoutImage(t, out, "linux/amd64")
	d, _ := img.Digest()
	if !got[d.String()] {
		t.Errorf("the record lists %v; the layout's linux/amd64 image is %s (index %v)", got, d, idx.Manifests[0].Digest)
	}
}

// The first artifact to fail ends the build: the others' work is
// cancelled, not waited for. Here a download hangs after its first bytes
// (with a stall timeout far away) while another fails its checksum.
func TestFirstFailureCancelsTheRest(t *testing.T) {
	bad := []byte("not what was pinned")
	started, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bad":
			// Sent once the hanging download is under way, so that the
			// failure has work in flight to cancel.
			select {
			case <-started:
			case <-release:
			}
			w.Write(bad)
		case "/slow":
			w.Write([]byte("first bytes"))
			w.(http.Flusher).Flush()
			close(started)
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-release:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: no handler outlives the test
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  bad:
    url: {url: %[1]s/bad, sha256: %[2]s}
    licenses: none
  slow:
    url: {url: %[1]s/slow, sha256: %[2]s}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: bad, dest: /}
      - {artifact: slow, dest: /}
`, srv.URL, strings.Repeat("0", 64)))
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "--jobs", "2", "--stall-timeout", "10m", "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml:4:") || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a download that fails its checksum: %v", err)
	}
	// The build returned, so the hanging download was given up: its
	// request was cancelled (the server sees the connection go).
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the hanging download was not cancelled")
	}
}

// Outputs that cannot take the images (a docker archive for a
// two-platform image, an upper-case repository, a recipe repository that
// names a host under a registry prefix) are refused before any download;
// an upper-case repository in the recipe at its line, whatever the output.
func TestOutputsRefusedBeforeWork(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		w.Write([]byte("x"))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	recipe := func(repo string) string {
		f := filepath.Join(dir, strings.ReplaceAll(repo, "/", "_")+".yaml")
		writeFile(t, f, fmt.Sprintf(`version: 1
artifacts:
  a:
    url: {url: %s/a, sha256: %s}
    licenses: none
images:
  app:
    repository: %s
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: a, dest: /}
`, srv.URL, fixture.SHA256([]byte("x")), repo))
		return f
	}
	for _, tc := range []struct {
		repo, out, want string
	}{
		{"app", "docker:" + filepath.Join(dir, "x.tar"), "would have 2 platforms"},
		// A layout's io.containerd.image.name is read as a reference.
		{"App", "oci:" + filepath.Join(dir, "ok"), `App.yaml:8: image app: repository "App" is not an image name: it must be lower-case`},
		{"app", "oci:" + filepath.Join(dir, "ok"), ""},
		{"app", "registry:127.0.0.1:1/Team/app", "could not parse reference"},
		{"ghcr.io/org/app", "registry:127.0.0.1:1/mirror/", "names a registry host"},
	} {
		mu.Lock()
		before := requests
		mu.Unlock()
		_, err := pallet(t, "build", "-q", "-f", recipe(tc.repo), "--no-cache", "-o", tc.out)
		mu.Lock()
		n := requests - before
		mu.Unlock()
		if tc.want == "" {
			if err != nil || n == 0 {
				t.Errorf("%s to %s: %v, after %d downloads", tc.repo, tc.out, err, n)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s to %s: %v, want %q", tc.repo, tc.out, err, tc.want)
		}
		if n != 0 {
			t.Errorf("%s to %s: %d downloads before the refusal", tc.repo, tc.out, n)
		}
	}
}

// A failure stops a Go build under way, compiler and all: the go
// command's children are killed with it, and the build does not wait
// for them. The C compiler of this cgo build sleeps first (its cc is a
// script), so without that it would be held for minutes.
func TestFailureStopsGoBuild(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	pids := filepath.Join(dir, "pids")
	writeFile(t, filepath.Join(dir, "slow.sh"), fmt.Sprintf("#!/bin/sh\necho $$ >> %s\ntouch %s\nsleep 600\nexec \"$@\"\n", pids, started))
	if err := os.Chmod(filepath.Join(dir, "slow.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "app/go.mod"), "module example.com/app\n\ngo 1.21\n")
	writeFile(t, filepath.Join(dir, "app/main.go"), "package main\n\nimport \"C\"\n\nfunc main() {}\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The checksum failure comes once the go build is in a tool.
		for i := 0; i < 600; i++ {
			if _, err := os.Stat(started); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		w.Write([]byte("not what was pinned"))
	}))
	t.Cleanup(srv.Close)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  app:
    go: {module: app, packages: ., cgo: true, cc: {linux/amd64: %s}}
    licenses: none
  bad:
    url: {url: %s/bad, sha256: %s}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /}
      - {artifact: bad, dest: /}
`, filepath.Join(dir, "slow.sh"), srv.URL, strings.Repeat("0", 64)))
	// No GOCACHE of its own: what depends on the C compiler cannot be
	// cached for this one, whose path is new, and the rest (std) is
	// taken from the go command's cache rather than compiled first.
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "--jobs", "2", "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a download that fails its checksum beside a go build: %v", err)
	}
	data, err := os.ReadFile(pids)
	if err != nil {
		t.Fatalf("the go build never ran a tool: %v", err)
	}
	// The tools (here: the sleeping wrapper) are gone with the build:
	// killed, if not yet reaped (a zombie, whose parent was killed too,
	// waits for init), which a moment's grace allows for.
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		deadline := time.Now().Add(10 * time.Second)
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("tool process %d outlived the failed build", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// A build never writes over, into, or around what it reads: its record
// and metadata file replace only files pallet wrote, and no output, record
// or cache lies on the recipe, inside a local input, or over a base
// layout. Each refusal comes before any work and leaves the files as
// they were.
func TestBuildSparesItsInputs(t *testing.T) {
	dir := t.TempDir()
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, filepath.Join(dir, "files", "a.txt"), "a")
	writeFile(t, filepath.Join(dir, "notes.txt"), "keep me")
	body := `version: 1
artifacts:
  files:
    local: {path: ./files}
    licenses: none
images:
  img:
    base: scratch
    platforms: [linux/amd64]
    files: [{artifact: files, dest: /files/}]
`
	writeFile(t, recipe, body)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+out, "--cache-dir", filepath.Join(dir, "cache"))
	baseRecipe := filepath.Join(dir, "onbase.yaml")
	writeFile(t, baseRecipe, strings.Replace(body, "base: scratch", "base: oci:"+out, 1))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"record over the recipe", []string{"-f", recipe, "-o", "oci:" + filepath.Join(dir, "o1"), "--record", recipe}, "is not one pallet wrote"},
		{"record over a user's file", []string{"-f", recipe, "-o", "oci:" + filepath.Join(dir, "o2"), "--record", filepath.Join(dir, "notes.txt")}, "notes.txt: it exists and is not one pallet wrote"},
		{"metadata over a user's file", []string{"-f", recipe, "-o", "oci:" + filepath.Join(dir, "o3"), "--metadata-file", filepath.Join(dir, "notes.txt")}, "metadata file"},
		{"record over a local input", []string{"-f", recipe, "-o", "oci:" + filepath.Join(dir, "o4"), "--record", filepath.Join(dir, "files", "a.txt")}, "is not one pallet wrote"},
		{"output inside a local input", []string{"-f", recipe, "-o", "oci:" + filepath.Join(dir, "files", "out")}, "is inside the local path of artifact files"},
		{"output over its own base", []string{"-f", baseRecipe, "-o", "oci:" + out}, "is the base oci:" + out},
		{"cache inside a local input", []string{"-f", recipe, "-o", "oci:" + filepath.Join(dir, "o5"), "--cache-dir", filepath.Join(dir, "files", "cache")}, "the cache directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pallet(t, append([]string{"build", "-q"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for p, want := range map[string]string{recipe: body, filepath.Join(dir, "notes.txt"): "keep me", filepath.Join(dir, "files", "a.txt"): "a"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s changed: %q %v", p, b, err)
		}
	}
	for _, p := range []string{"o1", "o2", "o3", "o4", "o5", "files/out", "files/cache"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s written by a refused build", p)
		}
	}
	// An earlier record and metadata file are pallet's, and replaced.
	meta := filepath.Join(dir, "meta.json")
	rec := filepath.Join(dir, "rec.json")
	for range 2 {
		mustPallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+out, "--cache-dir", filepath.Join(dir, "cache"), "--record", rec, "--metadata-file", meta)
	}
}

// --sbom-dir is checked before any work: a file there with a document's
// name that is not an earlier document stops the build with nothing
// written, not after the outputs.
func TestSBOMDirCheckedBeforeWork(t *testing.T) {
	recipe := copyExample(t, "hello")
	docs := filepath.Join(t.TempDir(), "docs")
	writeFile(t, filepath.Join(docs, "hello_linux-arm64.sbom.cdx.json"), "my notes")
	out := filepath.Join(t.TempDir(), "out")
	_, err := pallet(t, "build", "-q", "-f", recipe, "--no-cache", "--sbom", "--sbom-dir", docs, "-o", "oci:"+out)
	if err == nil || !strings.Contains(err.Error(), "hello_linux-arm64.sbom.cdx.json: it exists and is not one pallet wrote") || !strings.Contains(err.Error(), "bomFormat") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the output was written before --sbom-dir was refused")
	}
	if ents, _ := os.ReadDir(docs); len(ents) != 1 {
		t.Errorf("--sbom-dir changed: %v", ents)
	}
	// An earlier build's documents are replaced.
	os.Remove(filepath.Join(docs, "hello_linux-arm64.sbom.cdx.json"))
	for range 2 {
		mustPallet(t, "build", "-q", "-f", recipe, "--no-cache", "--sbom", "--sbom-dir", docs, "-o", "oci:"+out)
	}
}

// Without -f, a directory with a Dockerfile and no pallet.yaml is told
// how to build the Dockerfile; one with neither is told what is missing.
func TestDefaultRecipeMissingNamesDockerfile(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := pallet(t, "build", "-q")
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml") || strings.Contains(err.Error(), "Dockerfile") {
		t.Errorf("build with neither file: %v", err)
	}
	writeFile(t, "Containerfile", "FROM scratch\n")
	for _, cmd := range [][]string{{"build", "-q"}, {"fetch", "--mirror", "m"}} {
		_, err := pallet(t, cmd...)
		if err == nil || !strings.Contains(err.Error(), "open pallet.yaml") || !strings.Contains(err.Error(), "-f Containerfile") {
			t.Errorf("%s beside a Containerfile: %v, want it named", cmd[0], err)
		}
	}
}

// pallet fetch has no --offline: it fetches, and took the flag only to
// ignore it and use the network all the same.
func TestFetchHasNoOffline(t *testing.T) {
	recipe := copyExample(t, "hello")
	mirror := filepath.Join(t.TempDir(), "mirror")
	_, err := pallet(t, "fetch", "-q", "-f", recipe, "--mirror", mirror, "--offline")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --offline") {
		t.Errorf("fetch --offline: %v, want it refused", err)
	}
	if _, err := os.Stat(mirror); err == nil {
		t.Error("fetch --offline filled the mirror")
	}
}
