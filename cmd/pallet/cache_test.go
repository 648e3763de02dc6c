package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries)
}

// A rebuild with nothing changed fetches nothing, builds nothing and
// compresses nothing; changing one file rewrites only its layer.
func TestCacheNoopAndOneFileChange(t *testing.T) {
	cacheDir := t.TempDir()
	srv := fixture.Serve(t, fixture.AntreaReleases())
	recipe := copyExample(t, "antrea-windows")
	out := filepath.Join(t.TempDir(), "out")
	build := func() string {
		return mustPallet(t, "build", "-f", recipe, "--cache-dir", cacheDir, "--arg", "RELEASES="+srv.URL, "-o", "oci:"+out)
	}
	build()
	first := layoutIndex(t, out).Manifests[0].Digest
	requests := len(srv.Requests())
	layers := countFiles(t, filepath.Join(cacheDir, "layers"))
	artifacts := countFiles(t, filepath.Join(cacheDir, "artifacts"))

	log := build()
	if got := layoutIndex(t, out).Manifests[0].Digest; got != first {
		t.Errorf("no-op rebuild changed the digest: %s vs %s", got, first)
	}
	if n := len(srv.Requests()); n != requests {
		t.Errorf("no-op rebuild made %d download(s)", n-requests)
	}
	if n := countFiles(t, filepath.Join(cacheDir, "layers")); n != layers {
		t.Errorf("no-op rebuild wrote %d new layer(s)", n-layers)
	}
	if n := countFiles(t, filepath.Join(cacheDir, "artifacts")); n != artifacts {
		t.Errorf("no-op rebuild built %d artifact(s)", n-artifacts)
	}
	if !strings.Contains(log, "artifact antrea (windows/amd64)") || !strings.Contains(log, "cached") {
		t.Errorf("the log does not say what came from the cache:\n%s", log)
	}

	// One source file of the Go module changes: the Go artifact is rebuilt
	// and its layer written again; the CNI and OVS layers are not.
	main := filepath.Join(filepath.Dir(recipe), "agent", "cmd", "antctl", "main.go")
	src, _ := os.ReadFile(main)
	if err := os.WriteFile(main, append(src, []byte("\n// changed\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	build()
	if n := countFiles(t, filepath.Join(cacheDir, "layers")); n != layers+1 {
		t.Errorf("one changed file wrote %d new layer(s), want 1", n-layers)
	}
	if got := layoutIndex(t, out).Manifests[0].Digest; got == first {
		t.Error("a changed source gave the same image")
	}
}

// Two builds at once on one cache directory both succeed with the same
// digests; file locks keep them from doing the same work at once.
func TestCacheConcurrentBuilds(t *testing.T) {
	cacheDir := t.TempDir()
	srv := fixture.Serve(t, fixture.AntreaReleases())
	recipe := copyExample(t, "antrea-windows")
	var wg sync.WaitGroup
	outs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	errs := make([]error, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = pallet(t, "build", "-q", "-f", recipe, "--cache-dir", cacheDir, "--arg", "RELEASES="+srv.URL, "-o", "oci:"+outs[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, b := layoutIndex(t, outs[0]).Manifests[0].Digest, layoutIndex(t, outs[1]).Manifests[0].Digest; a != b {
		t.Errorf("concurrent builds differ: %s vs %s", a, b)
	}
	verifyCache(t, cacheDir)
}

// verifyCache checks every entry of a cache directory: blobs hash to
// their names, artifact entries are complete.
func verifyCache(t *testing.T, dir string) {
	t.Helper()
	verifyBlobs(t, dir)
	arts, _ := os.ReadDir(filepath.Join(dir, "artifacts"))
	for _, a := range arts {
		if _, err := os.Stat(filepath.Join(dir, "artifacts", a.Name(), "complete")); err != nil {
			t.Errorf("artifact entry %s is incomplete", a.Name())
		}
	}
}

// pallet killed with SIGKILL in the middle of a build (here, while a
// download is half done) leaves no corrupt cache entry, and the next build
// succeeds.
func TestKilledBuildLeavesCacheValid(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pallet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	releases := fixture.AntreaReleases()
	var mu sync.Mutex
	stall := true
	started := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := releases[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		s := stall
		mu.Unlock()
		if s && strings.HasSuffix(r.URL.Path, ".zip") {
			// Half the body, then hang until the client dies.
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			started <- struct{}{}
			<-r.Context().Done()
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	cacheDir := t.TempDir()
	recipe := copyExample(t, "antrea-windows")
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"build", "-q", "-f", recipe, "--cache-dir", cacheDir, "--arg", "RELEASES=" + srv.URL, "-o", "oci:" + out}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the build never reached the download")
	}
	time.Sleep(200 * time.Millisecond) // let the other artifacts write what they write
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	verifyCache(t, cacheDir)
	if _, err := os.Stat(out); err == nil {
		t.Error("a killed build left an output")
	}

	mu.Lock()
	stall = false
	mu.Unlock()
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("build after the kill: %v\n%s", err, b)
	}
	verifyCache(t, cacheDir)
	if len(layoutIndex(t, out).Manifests) != 1 {
		t.Error("no image after the rebuild")
	}
}

// A second machine with an empty local cache does none of the work the
// first did: artifacts and layers come from the registry cache.
func TestRegistryCache(t *testing.T) {
	needTool(t, "git")
	e := newKindEnv(t)
	reg := testregistry.Start(t, nil)
	cacheRef := "registry:" + reg.Host + "/ci/kind-cache:main"

	first := filepath.Join(t.TempDir(), "first")
	firstCache := t.TempDir()
	args := append(e.args(first), "--cache-dir", firstCache, "--cache-to", cacheRef, "--platform", "linux/amd64", "--mode", "containerd=release")
	mustPallet(t, args...)
	requests := len(e.srv.Requests())

	// The second machine's cache holds the remains of builds killed while
	// writing those entries (no completion marker): they must be replaced
	// by the registry's entries, not block them.
	secondCache := t.TempDir()
	for _, d := range []string{"blobs/sha256", "layers"} { // a cache Open made
		if err := os.MkdirAll(filepath.Join(secondCache, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := os.ReadDir(filepath.Join(firstCache, "artifacts"))
	for _, k := range keys {
		writeFile(t, filepath.Join(secondCache, "artifacts", k.Name(), "tree", "half-written"), "x")
	}

	second := filepath.Join(t.TempDir(), "second")
	// The upstream is gone for the second machine: it can only succeed
	// from the registry cache.
	e.srv.Close()
	if err := os.RemoveAll(filepath.Join(e.dir, "git")); err != nil {
		t.Fatal(err)
	}
	log := mustPallet(t, append(withoutQuiet(e.args(second)), "--progress", "plain", "--cache-dir", secondCache, "--cache-from", cacheRef, "--platform", "linux/amd64", "--mode", "containerd=release")...)
	if n := len(e.srv.Requests()); n != requests {
		t.Errorf("the second machine made %d download(s)", n-requests)
	}
	for _, a := range []string{"containerd", "runc", "crictl", "cni-plugins"} {
		if !regexp.MustCompile(`artifact ` + a + ` \(linux/amd64\) \[\w+, cached\]`).MatchString(log) {
			t.Errorf("%s was not taken from the registry cache:\n%s", a, log)
		}
	}
	if a, b := layoutIndex(t, first).Manifests[0].Digest, layoutIndex(t, second).Manifests[0].Digest; a != b {
		t.Errorf("registry-cached build %s differs from the first %s", b, a)
	}
	verifyCache(t, secondCache)
	// A cache that does not exist yet is not an error.
	mustPallet(t, append(e.args(filepath.Join(t.TempDir(), "third")), "--cache-dir", t.TempDir(), "--cache-from", "registry:"+reg.Host+"/ci/none:main", "--platform", "linux/amd64", "--mode", "containerd=local:"+localInputs(t, "amd64")["containerd"], "--mode", "runc=local:"+localInputs(t, "amd64")["runc"], "--mode", "crictl=local:"+localInputs(t, "amd64")["crictl"], "--mode", "cni-plugins=local:"+localInputs(t, "amd64")["cni-plugins"])...)
}

func withoutQuiet(args []string) []string {
	var out []string
	for _, a := range args {
		if a != "-q" {
			out = append(out, a)
		}
	}
	return out
}

// buildHelloCached builds the hello example for linux/amd64 into a fresh
// cache and layout, and returns them, the build's arguments and the
// image's digest.
func buildHelloCached(t *testing.T) (cacheDir, out string, args []string, digest v1.Hash) {
	t.Helper()
	cacheDir = t.TempDir()
	recipe := copyExample(t, "hello")
	out = filepath.Join(t.TempDir(), "out")
	args = []string{"build", "-q", "-f", recipe, "--cache-dir", cacheDir, "--platform", "linux/amd64", "-o", "oci:" + out}
	mustPallet(t, args...)
	return cacheDir, out, args, layoutIndex(t, out).Manifests[0].Digest
}

// A cached layer blob damaged on disk is not used: the build notices,
// writes the layer again, and the output is right.
func TestCorruptCachedLayerIsRebuilt(t *testing.T) {
	cacheDir, out, args, want := buildHelloCached(t)
	blobs, _ := filepath.Glob(filepath.Join(cacheDir, "blobs", "sha256", "*"))
	for _, b := range blobs {
		data, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff // same size, wrong content
		os.Remove(b)              // a new inode, as a rewrite would give
		if err := os.WriteFile(b, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.RemoveAll(out)
	mustPallet(t, args...)
	if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
		t.Errorf("after damage to the layers: %s, want %s", got, want)
	}
	verifyBlobs(t, out)

	// A built binary in the cache is changed behind pallet's back: the
	// entry is refused and the binary built again.
	bins, _ := filepath.Glob(filepath.Join(cacheDir, "artifacts", "*", "tree", "hello"))
	if len(bins) != 1 {
		t.Fatalf("cached hello binaries: %v", bins)
	}
	if err := os.WriteFile(bins[0], []byte("not hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(out)
	mustPallet(t, args...)
	if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
		t.Errorf("after damage to an artifact: %s, want %s", got, want)
	}
	verifyBlobs(t, out)
}

// A cached layer entry whose diff ID or compression was damaged, its blob
// whole, is not used either: those go into the image config as they are.
func TestDamagedLayerEntryIsRebuilt(t *testing.T) {
	cacheDir, out, args, want := buildHelloCached(t)
	entries, _ := filepath.Glob(filepath.Join(cacheDir, "layers", "*.json"))
	if len(entries) == 0 {
		t.Fatal("no layer entries in the cache")
	}
	for _, damage := range []func(e map[string]any){
		// Another digest that is well formed: the blob's own.
		func(e map[string]any) { e["diffID"] = e["digest"] },
		func(e map[string]any) { e["compression"] = "zstd" },
	} {
		for _, p := range entries {
			var e map[string]any
			if err := json.Unmarshal([]byte(readFileString(t, p)), &e); err != nil {
				t.Fatal(err)
			}
			damage(e)
			b, _ := json.Marshal(e)
			writeFile(t, p, string(b))
		}
		os.RemoveAll(out)
		mustPallet(t, args...)
		if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
			t.Errorf("after damage to the layer entries: %s, want %s", got, want)
		}
	}
}

// A layer entry moved or copied under another key (a cache merged or
// restored by hand), its blob whole, is not that key's layer: the build
// shipped the other layer in its place, digests and all.
func TestLayerEntryUnderAnotherKeyIsRebuilt(t *testing.T) {
	cacheDir, out, args, want := buildHelloCached(t)
	entries, _ := filepath.Glob(filepath.Join(cacheDir, "layers", "*.json"))
	if len(entries) < 2 {
		t.Fatalf("%d layer entries in the cache, want two to swap", len(entries))
	}
	first := readFileString(t, entries[0])
	for i, p := range entries {
		next := first
		if i+1 < len(entries) {
			next = readFileString(t, entries[i+1])
		}
		writeFile(t, p, next)
	}
	os.RemoveAll(out)
	msgs := mustPallet(t, append(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-q" }), "--progress", "plain")...)
	if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
		t.Errorf("with the layer entries rotated: %s, want %s", got, want)
	}
	if !strings.Contains(msgs, "was written for key") {
		t.Errorf("the moved entries were not reported:\n%s", msgs)
	}
	// Each written again under its own key.
	for _, p := range entries {
		var e struct{ Key string }
		if err := json.Unmarshal([]byte(readFileString(t, p)), &e); err != nil {
			t.Fatal(err)
		}
		if e.Key+".json" != filepath.Base(p) {
			t.Errorf("%s names key %q after the build", p, e.Key)
		}
	}
}

// A digest memo that says the wrong thing of an input fails one build at
// most: the build that finds it out drops it, and the next one is right.
func TestWrongMemoDigestHeals(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	content := "tool content\n"
	writeFile(t, filepath.Join(dir, "tool"), content)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  tool:
    local: {path: tool}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: tool, dest: /tool}
`)
	// Only a file left alone for a while has its digest remembered.
	time.Sleep(2100 * time.Millisecond)
	out := filepath.Join(dir, "out")
	args := []string{"build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cacheDir, "-o", "oci:" + out}
	mustPallet(t, args...)
	want := layoutIndex(t, out).Manifests[0].Digest
	sum := fixture.SHA256([]byte(content))
	wrong := fixture.SHA256([]byte("other content"))
	shards, _ := filepath.Glob(filepath.Join(cacheDir, "memo", "*"))
	damaged := 0
	for _, p := range shards {
		data := readFileString(t, p)
		if strings.Contains(data, sum) {
			writeFile(t, p, strings.ReplaceAll(data, sum, wrong))
			damaged++
		}
	}
	if damaged == 0 {
		t.Fatalf("the memo (%v) does not hold the input's digest", shards)
	}
	os.RemoveAll(out)
	os.RemoveAll(filepath.Join(cacheDir, "uptodate"))
	var err error
	for range 2 {
		if _, err = pallet(t, args...); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "changed while the build read it") {
			t.Fatalf("a wrong memo: %v", err)
		}
	}
	if err != nil {
		t.Fatalf("the build after one found the memo wrong still fails: %v", err)
	}
	if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
		t.Errorf("after a wrong memo: %s, want %s", got, want)
	}
}

// toolRecipe writes, in a new directory it returns, pallet.yaml placing
// at / the one-file archive tool.tar.gz beside it, on scratch.
func toolRecipe(t *testing.T) string {
	t.Helper()
	archive := fixture.TarGz([]fixture.File{{Name: "bin/tool", Content: "tool", Mode: 0o755}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tool.tar.gz"), string(archive))
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  tool:
    local: {path: tool.tar.gz, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: tool, dest: /}
`)
	return dir
}

// A named pipe or a directory where the cache keeps a file (a layer
// blob or entry, an artifact's digest or record, a memo shard, a note)
// neither hangs the build nor fails it: the entry is a miss, rebuilt, and
// the file written again in its place.
func TestCacheFilesReplacedByPipesOrDirs(t *testing.T) {
	dir := toolRecipe(t)
	time.Sleep(2100 * time.Millisecond) // settled: remembered in the memo
	globs := []string{"blobs/sha256/*", "layers/*.json", "artifacts/*/digest", "artifacts/*/record.json", "memo/*", "uptodate/*.json"}
	for _, kind := range []string{"pipe", "dir"} {
		t.Run(kind, func(t *testing.T) {
			// Made by pallet, and so its own: notes are kept there.
			cacheDir := filepath.Join(t.TempDir(), "cache")
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cacheDir, "-o", "oci:" + out}
			// The second build leaves a note: the first made the cache.
			mustPallet(t, args...)
			mustPallet(t, args...)
			want := layoutIndex(t, out).Manifests[0].Digest
			for _, g := range globs {
				ms, _ := filepath.Glob(filepath.Join(cacheDir, g))
				if len(ms) == 0 {
					t.Fatalf("nothing in the cache matches %s", g)
				}
				for _, m := range ms {
					if err := os.Remove(m); err != nil {
						t.Fatal(err)
					}
					if kind == "pipe" {
						err := syscall.Mkfifo(m, 0o644)
						if err != nil {
							t.Fatal(err)
						}
					} else {
						writeFile(t, filepath.Join(m, "x"), "x")
					}
				}
			}
			os.RemoveAll(out)
			for i := range 2 {
				done := make(chan error, 1)
				go func() {
					msgs, err := pallet(t, args...)
					if err != nil {
						err = fmt.Errorf("%w\n%s", err, msgs)
					}
					done <- err
				}()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("build %d with a %s in the cache: %v", i+1, kind, err)
					}
				case <-time.After(2 * time.Minute):
					t.Fatalf("build %d with a %s in the cache hangs", i+1, kind)
				}
				if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
					t.Errorf("build %d with a %s in the cache: %s, want %s", i+1, kind, got, want)
				}
			}
			for _, g := range globs {
				ms, _ := filepath.Glob(filepath.Join(cacheDir, g))
				for _, m := range ms {
					if info, err := os.Lstat(m); err != nil || !info.Mode().IsRegular() {
						t.Errorf("%s is not a file again after two builds: %v", m, info.Mode())
					}
				}
			}
		})
	}
}

// Lock files the cache did not make (a cache restored from a CI job that
// another party could write to) are not opened: pallet followed a symlink
// in locks/ and created the file it named, wherever that was, and waited
// for good on a named pipe there, or on one beside a killed build's
// directory in tmp/, where the sweep takes the lock. A link or pipe in
// locks/ fails the build naming it, and once it is removed the build
// succeeds; the sweep leaves a pipe in tmp/ and what it guards.
func TestCacheLocksThatAreNotFilesAreNotOpened(t *testing.T) {
	dir := toolRecipe(t)
	build := func(t *testing.T, args []string) (string, error) {
		t.Helper()
		type result struct {
			msgs string
			err  error
		}
		done := make(chan result, 1)
		go func() {
			msgs, err := pallet(t, args...)
			done <- result{msgs, err}
		}()
		select {
		case r := <-done:
			return r.msgs, r.err
		case <-time.After(time.Minute):
			t.Fatal("the build hangs")
			return "", nil
		}
	}
	for _, kind := range []string{"link", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			cacheDir := filepath.Join(t.TempDir(), "cache")
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cacheDir, "-o", "oci:" + out}
			mustPallet(t, args...)
			want := layoutIndex(t, out).Manifests[0].Digest
			os.RemoveAll(out)

			// A killed build's directory, its lock replaced by a pipe.
			killed := filepath.Join(cacheDir, "tmp", "build-killed")
			writeFile(t, filepath.Join(killed, "x"), "x")
			if err := syscall.Mkfifo(killed+".lock", 0o644); err != nil {
				t.Fatal(err)
			}
			if msgs, err := build(t, args); err != nil {
				t.Fatalf("build with a pipe for a lock in tmp/: %v\n%s", err, msgs)
			}
			if _, err := os.Stat(filepath.Join(killed, "x")); err != nil {
				t.Errorf("the sweep removed what a pipe for a lock guards: %v", err)
			}

			// Every entry dropped, so that each is made again under its lock.
			for _, sub := range []string{"artifacts", "layers"} {
				if err := os.RemoveAll(filepath.Join(cacheDir, sub)); err != nil {
					t.Fatal(err)
				}
			}
			os.RemoveAll(out)
			outside := t.TempDir()
			locks, _ := filepath.Glob(filepath.Join(cacheDir, "locks", "*.lock"))
			if len(locks) == 0 {
				t.Fatal("the build left no lock files")
			}
			for _, l := range locks {
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
				var err error
				if kind == "link" {
					err = os.Symlink(filepath.Join(outside, filepath.Base(l)), l)
				} else {
					err = syscall.Mkfifo(l, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			what := map[string]string{"link": "a symbolic link", "pipe": "a named pipe"}[kind]
			msgs, err := build(t, args)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(cacheDir, "locks")) || !strings.Contains(err.Error(), "is "+what+", which pallet neither follows nor opens") {
				t.Errorf("build with %s for each lock: %v, want it named and refused\n%s", what, err, msgs)
			}
			if made, _ := os.ReadDir(outside); len(made) != 0 {
				t.Errorf("the build created %s where links in locks/ lead", made[0].Name())
			}

			for _, l := range locks {
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
			}
			if msgs, err := build(t, args); err != nil {
				t.Fatalf("build once the planted locks are gone: %v\n%s", err, msgs)
			}
			if got := layoutIndex(t, out).Manifests[0].Digest; got != want {
				t.Errorf("rebuilt %s, want %s", got, want)
			}
			verifyCache(t, cacheDir)
		})
	}
}

// verifyBlobs checks that every blob under dir/blobs/sha256 (a layout's
// or the cache's) hashes to its name.
func verifyBlobs(t *testing.T, dir string) {
	t.Helper()
	blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "sha256", "*"))
	for _, b := range blobs {
		f, err := os.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, f)
		f.Close()
		if got := hex.EncodeToString(h.Sum(nil)); got != filepath.Base(b) {
			t.Errorf("blob %s holds %s", b, got)
		}
	}
}

// A cached artifact made from a copy elsewhere is recorded as this build's:
// the record says where this recipe took its input from.
func TestCacheHitRecordsOwnOrigin(t *testing.T) {
	cacheDir := t.TempDir()
	archive := fixture.TarGz([]fixture.File{{Name: "bin/tool", Content: "tool", Mode: 0o755}})
	for i, sub := range []string{"first", "second"} {
		// The record names inputs relative to the recipe: each build's
		// own, under a directory of its own name.
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, sub, "tool.tar.gz"), string(archive))
		writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  tool:
    local:
      path: `+sub+`/tool.tar.gz
      extract: {}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: tool
        dest: /
`)
		out := filepath.Join(dir, "out")
		log := mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cacheDir, "-o", "oci:"+out)
		rec := readRecord(t, out+".record.json")
		if want := sub + "/tool.tar.gz"; len(rec.Artifacts) != 1 || rec.Artifacts[0].Path != want {
			t.Errorf("record %+v, want path %s", rec.Artifacts, want)
		}
		if len(rec.Artifacts) == 1 && rec.Artifacts[0].SHA256 != fixture.SHA256(archive) {
			t.Errorf("record sha256 %s, want %s", rec.Artifacts[0].SHA256, fixture.SHA256(archive))
		}
		if i == 1 && !strings.Contains(log, "[local, cached]") {
			t.Errorf("the second build did not take the artifact from the cache:\n%s", log)
		}
	}
}

// CI jobs that build different platforms into one registry cache keep each
// other's entries: an export merges with what the cache holds.
func TestRegistryCacheExportsMerge(t *testing.T) {
	reg := testregistry.Start(t, nil)
	cacheRef := "registry:" + reg.Host + "/ci/hello-cache:main"
	recipe := copyExample(t, "hello")
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		mustPallet(t, "build", "-q", "-f", recipe, "--platform", p, "--cache-dir", t.TempDir(), "--cache-to", cacheRef, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	}
	// A fresh machine building both finds both jobs' work.
	log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", t.TempDir(), "--cache-from", cacheRef, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if !strings.Contains(log, "artifact hello ("+p+") [go, cached]") {
			t.Errorf("hello for %s was not in the merged cache:\n%s", p, log)
		}
	}
}

// A registry base's layers are kept in the cache once downloaded and served
// as the registry has them: an uncompressed layer stays uncompressed, so a
// push and a layout from the cache name the same blobs the manifest does;
// a damaged cached blob is fetched again.
func TestRegistryBaseFromCache(t *testing.T) {
	var blobGets sync.Map // digest -> *atomic.Int64
	gets := func(d v1.Hash) int64 {
		n, _ := blobGets.LoadOrStore(d.String(), new(atomic.Int64))
		return n.(*atomic.Int64).Load()
	}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i := strings.Index(r.URL.Path, "/blobs/sha256:"); r.Method == http.MethodGet && i >= 0 {
				n, _ := blobGets.LoadOrStore(r.URL.Path[i+len("/blobs/"):], new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	plain := static.NewLayer(fixture.Tar([]fixture.File{{Name: "etc/os-release", Content: "ID=test\n", Mode: 0o644}}), types.OCIUncompressedLayer)
	gz, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(fixture.TarGz([]fixture.File{{Name: "usr/share/base.txt", Content: "base\n", Mode: 0o644}}))), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if base, err = mutate.AppendLayers(base, plain, gz); err != nil {
		t.Fatal(err)
	}
	baseRef, _ := name.ParseReference(reg.Host + "/base/tiny:1")
	if err := remote.Write(baseRef, base); err != nil {
		t.Fatal(err)
	}
	recipe := copyExample(t, "hello")
	src, _ := os.ReadFile(recipe)
	writeFile(t, recipe, strings.Replace(string(src), "base: scratch", "base: "+baseRef.String(), 1))

	cacheDir := t.TempDir()
	build := func(extra ...string) string {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, append([]string{"build", "-q", "-f", recipe, "--platform", "linux/amd64", "--cache-dir", cacheDir, "-o", "oci:" + out}, extra...)...)
		verifyBlobs(t, out)
		if files := readImageFiles(t, out, "linux/amd64"); files["etc/os-release"] != "ID=test\n (644)" || files["usr/local/bin/hello"] == "" {
			t.Errorf("image files: %v", files)
		}
		return layoutIndex(t, out).Manifests[0].Digest.String()
	}
	gzDigest, _ := gz.Digest()
	plainDigest, _ := plain.Digest()
	first := build()
	if gets(gzDigest) != 1 || gets(plainDigest) != 1 {
		t.Errorf("first build downloaded the base layers %d and %d times, want once each", gets(gzDigest), gets(plainDigest))
	}
	// From the cache now; pushed to the same registry too.
	if got := build("-o", "registry:"+reg.Host+"/app/hello"); got != first {
		t.Errorf("second build %s, first %s", got, first)
	}
	if gets(gzDigest) != 1 || gets(plainDigest) != 1 {
		t.Errorf("the second build downloaded base layers again (%d, %d GETs in all)", gets(gzDigest), gets(plainDigest))
	}
	cached := filepath.Join(cacheDir, "blobs", "sha256", gzDigest.Hex)
	data, err := os.ReadFile(cached)
	if err != nil {
		t.Fatalf("the base layer is not in the cache: %v", err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(cached, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := build(); got != first {
		t.Errorf("build after damage %s, first %s", got, first)
	}
	if gets(gzDigest) != 2 || gets(plainDigest) != 1 {
		t.Errorf("after damage to one cached layer: %d and %d GETs in all, want 2 and 1", gets(gzDigest), gets(plainDigest))
	}
	verifyBlobs(t, cacheDir)
}

// A module edited while go build runs (here by a go command first on
// PATH that edits it before it builds, to make the timing certain) fails
// the build: the binary may be of either version, and must not be cached
// under the old one's key.
func TestSourceEditedDuringBuild(t *testing.T) {
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app/go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app/main.go"), "package main\n\nfunc main() {}\n")
	bin := filepath.Join(dir, "bin")
	writeFile(t, filepath.Join(bin, "go"), "#!/bin/sh\nif [ \"$1\" = build ]; then echo '// edited' >> "+filepath.Join(dir, "app/main.go")+"; fi\nexec "+realGo+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go:
      module: app
      packages: .
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: app
        dest: /bin/
`)
	cacheDir := t.TempDir()
	_, err = pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "artifact app (linux/amd64, go): its inputs changed while it was being built") {
		t.Errorf("got %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(cacheDir, "artifacts")); len(entries) != 0 {
		t.Errorf("the cache stored %d artifact(s) built from a changing module", len(entries))
	}
}

// A local file is used where it is, never linked into the cache: editing
// it in place later cannot change what the cache holds.
func TestLocalFileStaysOutOfCache(t *testing.T) {
	recipe := copyExample(t, "hello")
	conf := filepath.Join(filepath.Dir(recipe), "etc", "hello.conf")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	info, err := os.Stat(conf)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.Sys().(*syscall.Stat_t).Nlink; n != 1 {
		t.Errorf("%s has %d links after the build; the cache shares its inode", conf, n)
	}
}

// rawManifest puts a manifest as given.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// A registry cache's layer entry whose diff ID annotation does not match
// its blob is not taken: the layer is rebuilt, and the image is right.
func TestRegistryCacheChecksDiffIDs(t *testing.T) {
	reg := testregistry.Start(t, nil)
	ref := reg.Host + "/ci/checked:main"
	recipe := copyExample(t, "hello")
	first := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--cache-dir", t.TempDir(), "--cache-to", "registry:"+ref, "-o", "oci:"+first)

	nref, _ := name.ParseReference(ref)
	desc, err := remote.Get(nref)
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	lied := 0
	for i, l := range m.Layers {
		if l.Annotations["dev.pallet.cache.layer"] != "" {
			m.Layers[i].Annotations["dev.pallet.cache.diffid"] = "sha256:" + strings.Repeat("0", 64)
			lied++
		}
	}
	if lied == 0 {
		t.Fatal("the cache holds no layer entries")
	}
	raw, _ := json.Marshal(m)
	if err := remote.Put(nref, rawManifest{raw, desc.MediaType}); err != nil {
		t.Fatal(err)
	}

	second := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--cache-dir", t.TempDir(), "--cache-from", "registry:"+ref, "-o", "oci:"+second)
	if a, b := layoutIndex(t, first).Manifests[0].Digest, layoutIndex(t, second).Manifests[0].Digest; a != b {
		t.Errorf("built from a cache with wrong diff IDs: %s, want %s", b, a)
	}
	cf, err := layoutImage(t, second, "linux/amd64").ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cf.RootFS.DiffIDs {
		if d.Hex == strings.Repeat("0", 64) {
			t.Error("the annotation's diff ID reached the image config")
		}
	}
}

// The digest memo only saves rehashing: a cache whose memo cannot be
// written (here a file stands where its directory belongs, as a full
// disk would fail the write) costs the next build that saving, with a
// warning, not this build its output; and the file is left as it is.
func TestMemoUnwritableOnlyWarns(t *testing.T) {
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	recipe, cacheDir := filepath.Join(dir, "pallet.yaml"), filepath.Join(dir, "cache")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(dir, "first"))
	memo := filepath.Join(cacheDir, "memo")
	if err := os.RemoveAll(memo); err != nil {
		t.Fatal(err)
	}
	writeFile(t, memo, "not pallet's\n")
	// A new input, so that the memo has something to save.
	writeFile(t, filepath.Join(dir, "file.txt"), "other data\n")
	log, err := pallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(dir, "second"))
	if err != nil {
		t.Fatalf("the build failed on its digest memo: %v\n%s", err, log)
	}
	if !strings.Contains(log, "digest memo") {
		t.Errorf("no warning about the memo:\n%s", log)
	}
	if b, err := os.ReadFile(memo); err != nil || string(b) != "not pallet's\n" {
		t.Errorf("the file at %s was changed: %q, %v", memo, b, err)
	}
	fresh := filepath.Join(dir, "fresh")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", filepath.Join(dir, "cache2"), "-o", "oci:"+fresh)
	if a, b := layoutIndex(t, filepath.Join(dir, "second")).Manifests[0].Digest, layoutIndex(t, fresh).Manifests[0].Digest; a != b {
		t.Errorf("built with an unwritable memo: %s, with a fresh cache: %s", a, b)
	}
}

// An image whose base brings layers past the number Docker runs is
// built, with a warning that says so at the base's line: the recipe's
// own layers are capped, a base's cannot be. Past the number overlayfs
// mounts (image.MaxLayers), it is refused there.
func TestManyBaseLayersWarn(t *testing.T) {
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	for _, n := range []int{image.DockerMaxLayers - 1, image.DockerMaxLayers, image.MaxLayers} {
		img, err := random.Image(16, int64(n))
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", "amd64"
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		base := filepath.Join(dir, fmt.Sprintf("base%d", n))
		p, err := layout.Write(base, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
		recipe := filepath.Join(dir, "pallet.yaml")
		data, _ := os.ReadFile(recipe)
		writeFile(t, recipe, strings.Replace(string(data), "base: scratch", "base: oci:"+base, 1))
		log, err := pallet(t, "build", "--progress", "plain", "-f", recipe, "-o", "oci:"+filepath.Join(dir, "out"))
		if n+1 > image.MaxLayers {
			if err == nil || !strings.Contains(log, "pallet.yaml:8: image app (linux/amd64): 501 layers, 500 of them from base") {
				t.Errorf("%d base layers and one: %v, want them refused at the base's line:\n%s", n, err, log)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d base layers: %v\n%s", n, err, log)
		}
		warned := strings.Contains(log, "Docker refuses to run an image of more than 125")
		if want := n+1 > image.DockerMaxLayers; warned != want || (want && !strings.Contains(log, "pallet.yaml:8")) {
			t.Errorf("%d base layers and one: warned %v, want %v:\n%s", n, warned, want, log)
		}
		writeFile(t, recipe, string(data))
	}
}

// The built-in Windows base's layer is taken from a registry cache as
// the build's own are, though the build keys it without writing its
// files: checking the entry's diff ID writes them (it reads the tree's
// tar), so the entry is used, not rebuilt with a warning.
func TestRegistryCacheBuiltinBase(t *testing.T) {
	reg := testregistry.Start(t, nil)
	ref := "registry:" + reg.Host + "/ci/hpc:main"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app.exe"), "MZ app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    local: {path: app.exe}
    licenses: none
images:
  app:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: app, dest: /app.exe}
`)
	recipe := filepath.Join(dir, "pallet.yaml")
	first := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "--cache-to", ref, "-o", "oci:"+first)
	second := filepath.Join(t.TempDir(), "out")
	log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", t.TempDir(), "--cache-from", ref, "-o", "oci:"+second)
	if strings.Contains(log, "not used") {
		t.Errorf("a layer entry of the shared cache was not used:\n%s", log)
	}
	if a, b := layoutIndex(t, first).Manifests[0].Digest, layoutIndex(t, second).Manifests[0].Digest; a != b {
		t.Errorf("built from the shared cache: %s, want %s", b, a)
	}
}
