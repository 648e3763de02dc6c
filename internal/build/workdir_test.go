package build

import (
	"archive/tar"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// atOutput, when the build's first output step starts (the layers are
// written, the build's end has not begun), waits for list to give
// nothing, and keeps in left what it gave last: the removals it waits
// for run beside the build, and are given 10 s.
type atOutput struct {
	progress.Reporter
	list func() []string
	left []string
	done bool
}

func (r *atOutput) Start(name string) func(string, error) {
	if strings.HasPrefix(name, "output ") && !r.done {
		r.done = true
		deadline := time.Now().Add(10 * time.Second)
		for r.left = r.list(); len(r.left) > 0 && time.Now().Before(deadline); r.left = r.list() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return r.Reporter.Start(name)
}

// An artifact's work directory goes as soon as its result is in the
// cache, not with the build's work directory at the end: removing a
// directory can take milliseconds (ext4 mounted with discard), and a
// build waits for what is left at its end.
func TestArtifactWorkDirRemovedOnceCached(t *testing.T) {
	tmp, dir := goAppBuild(t)
	workDirsGoBesideTheBuild(t, tmp, dir, "the artifact's work directory is still there")
}

// workDirsGoBesideTheBuild builds dir/pallet.yaml with its work
// directory under tmp, and fails t if, when the outputs are written, the
// artifacts' work directories are still there (saying what), or, when it
// ends, the build's own.
func workDirsGoBesideTheBuild(t *testing.T, tmp, dir, what string) {
	t.Helper()
	rep := &atOutput{Reporter: quietReporter(t), list: func() []string {
		left, _ := filepath.Glob(filepath.Join(tmp, "pallet-build-*", "artifact-*"))
		return left
	}}
	buildRecipe(t, dir, rep)
	if !rep.done {
		t.Fatal("no output step started")
	}
	if len(rep.left) > 0 {
		t.Errorf("when the outputs are written, %s: %v", what, rep.left)
	}
	if work, _ := filepath.Glob(filepath.Join(tmp, "pallet-build-*")); len(work) > 0 {
		t.Errorf("the build's work directory is left: %v", work)
	}
}

// writeFiles writes files, by their path under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func quietReporter(t *testing.T) progress.Reporter {
	t.Helper()
	quiet, err := progress.New("quiet", nil)
	if err != nil {
		t.Fatal(err)
	}
	return quiet
}

// buildRecipe builds dir/pallet.yaml into the OCI layout dir/out, with a
// cache of its own, and gives the cache's directory.
func buildRecipe(t *testing.T, dir string, rep progress.Reporter) string {
	t.Helper()
	cacheDir := t.TempDir()
	if _, err := Run(context.Background(), recipePlan(t, dir), Options{Outputs: []output.Target{ociLayout(t, filepath.Join(dir, "out"))}, CacheDir: cacheDir, Progress: rep}); err != nil {
		t.Fatal(err)
	}
	return cacheDir
}

// recipePlan loads dir/pallet.yaml and plans all of it.
func recipePlan(t *testing.T, dir string) *plan.Plan {
	t.Helper()
	r, err := recipe.Load(filepath.Join(dir, "pallet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(recipe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ociLayout is the output of an OCI layout at dir.
func ociLayout(t *testing.T, dir string) output.Target {
	t.Helper()
	out, err := output.Parse("oci:"+dir, output.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A layer's temporary directory in the cache, removed beside the rest of
// the build since its blob is in the cache (cachedBuild), is gone with
// its lock when Run returns, for every layer written: the removals are
// waited for, not left to the next build's sweep.
func TestLayerTempDirsRemovedByRunEnd(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a": "a\n",
		"b": "b\n",
		"pallet.yaml": `version: 1
artifacts:
  a:
    local: {path: a}
    licenses: none
  b:
    local: {path: b}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: a, dest: /a, layer: a}
      - {artifact: b, dest: /b, layer: b}
`,
	})
	cacheDir := buildRecipe(t, dir, quietReporter(t))
	blobs, _ := filepath.Glob(filepath.Join(cacheDir, "blobs", "sha256", "*"))
	if len(blobs) < 2 {
		t.Fatalf("the cache holds %d blobs, want the layers' (at least 2)", len(blobs))
	}
	if left, _ := filepath.Glob(filepath.Join(cacheDir, "tmp", "build-*")); len(left) > 0 {
		t.Errorf("the layers' temporary directories or their locks are left in the cache: %v", left)
	}
}

// The licence copies a build places (the Go toolchain's, the modules')
// are in its layers once the images are made: they go beside the
// outputs, not with the build's work directory at its end, which waits
// for them. The image still ships them.
func TestLicenceCopiesRemovedBeforeOutputs(t *testing.T) {
	tmp, dir := goAppBuild(t)
	rep := &atOutput{Reporter: quietReporter(t), list: func() []string { return licenceFiles(t, tmp) }}
	res, err := Run(context.Background(), recipePlan(t, dir), Options{Outputs: []output.Target{ociLayout(t, filepath.Join(dir, "out"))}, CacheDir: t.TempDir(), Progress: rep, ModuleLicenses: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.done {
		t.Fatal("no output step started")
	}
	if len(rep.left) > 0 {
		t.Errorf("when the outputs are written, the licence copies are still there: %v", rep.left)
	}
	var shipped []string
	ls, err := res.Images[0].Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if strings.HasPrefix(h.Name, "LICENSES/") && h.Typeflag == tar.TypeReg {
				shipped = append(shipped, h.Name)
			}
		}
		rc.Close()
	}
	want := "LICENSES/app/" + goLicensePath(goVersionIn(t, filepath.Join(dir, "app")))
	if !slices.Contains(shipped, want) {
		t.Errorf("the image ships %v, not the Go toolchain's licence %s", shipped, want)
	}
}

// licenceFiles are the files named LICENSE under dir: the licence
// copies of a build whose work directory is there.
func licenceFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() == "LICENSE" {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// goVersionIn is the version of the go command on PATH, run in dir.
func goVersionIn(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir = dir
	v, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

// goAppBuild writes a recipe placing a small Go program on scratch, and
// points TMPDIR, where a build's work directory goes, at a directory of
// its own; it gives that directory and the recipe's.
func goAppBuild(t *testing.T) (tmp, dir string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	tmp = t.TempDir() // where the build's work directory goes
	t.Setenv("TMPDIR", tmp)
	dir = t.TempDir()
	writeFiles(t, dir, map[string]string{
		"app/go.mod":  "module example.com/app\n\ngo 1.22\n",
		"app/main.go": "package main\n\nfunc main() { println(1) }\n",
		"pallet.yaml": `version: 1
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
`,
	})
	return tmp, dir
}

// A local file or directory is taken where it is: its artifact's work
// directory, which the fetch leaves empty, goes beside the build too,
// not with the build's work directory at its end.
func TestLocalArtifactWorkDirRemovedBesideTheBuild(t *testing.T) {
	tmp := t.TempDir() // where the build's work directory goes
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"file.txt":       "file\n",
		"tree/a.txt":     "a\n",
		"tree/sub/b.txt": "b\n",
		"pallet.yaml": `version: 1
artifacts:
  file:
    local: {path: file.txt}
    licenses: none
  tree:
    local: {path: tree}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: file, dest: /file.txt}
      - {artifact: tree, dest: /tree/}
`,
	})
	workDirsGoBesideTheBuild(t, tmp, dir, "the local artifacts' work directories are still there")
}

// The go env answers a build asked in its work directory go with it: a
// process running build after build (a test binary, a server) kept one
// more for each, in a map of the whole process.
func TestBuildsLeaveNoToolchainAnswers(t *testing.T) {
	_, dir := goAppBuild(t)
	p, out := recipePlan(t, dir), ociLayout(t, filepath.Join(dir, "out"))
	held := artifact.ToolchainAnswersHeld()
	for i := range 3 {
		// The second build of each cache asks the toolchain of the
		// binary it takes from the cache where the memo could not keep
		// what the first's build said (a go command changed in the last
		// 2 s, or one that is not the release it runs).
		cacheDir := t.TempDir()
		for j := range 2 {
			if _, err := Run(t.Context(), p, Options{Outputs: []output.Target{out}, CacheDir: cacheDir, Progress: quietReporter(t), ModuleLicenses: true}); err != nil {
				t.Fatal(err)
			}
			if n := artifact.ToolchainAnswersHeld(); n != held {
				t.Fatalf("after build %d of cache %d, %d go env answers held, want %d", j+1, i+1, n, held)
			}
		}
	}
}
