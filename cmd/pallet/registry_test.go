package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// palletOut runs one command line in-process and returns stdout and
// stderr apart.
func palletOut(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// fanRecipe writes a recipe with a Go program for linux/amd64 and
// windows/amd64, on scratch and on the host-process base.
func fanRecipe(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/fan\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"fan\") }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  fan:
    go:
      module: .
      packages: .
      ldflags: ["-s", "-w"]
    licenses: none
images:
  fan:
    tags: [latest]
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: [linux/amd64, windows/amd64]
    files:
      - artifact: fan
        dest: /app/
`)
	return filepath.Join(dir, "pallet.yaml")
}

var digestLine = regexp.MustCompile(`^(\S+)@(sha256:[0-9a-f]{64})$`)

// Two runners each build one platform and push it by digest, a third
// merges them: the index is the one a build of both on one machine makes.
func TestFanOutAcrossRunners(t *testing.T) {
	reg := testregistry.Start(t, nil)
	recipe := fanRecipe(t)
	dir := t.TempDir()
	repo := reg.Host + "/fan/app"
	runner := func(platform string) (string, string) {
		meta := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-")+".json")
		stdout, stderr, err := palletOut(t, "build", "-q", "-f", recipe, "--platform", platform, "-o", "registry:"+repo, "--push-by-digest",
			"--metadata-file", meta, "--cache-dir", t.TempDir(), "--record", filepath.Join(t.TempDir(), "record.json"))
		if err != nil {
			t.Fatalf("runner %s: %v\n%s", platform, err, stderr)
		}
		m := digestLine.FindStringSubmatch(strings.TrimSpace(stdout))
		if m == nil || m[1] != repo {
			t.Fatalf("runner %s printed %q, want %s@sha256:...", platform, stdout, repo)
		}
		return m[2], meta
	}
	linux, linuxMeta := runner("linux/amd64")
	windows, windowsMeta := runner("windows/amd64")
	latest, _ := name.NewTag(repo + ":latest")
	if _, err := remote.Head(latest); err == nil {
		t.Error("a push by digest set the recipe's tag")
	}

	stdout, stderr, err := palletOut(t, "index", "create", repo+":1.0", "--from-metadata", linuxMeta, "--from-metadata", windowsMeta)
	if err != nil {
		t.Fatalf("index create: %v\n%s", err, stderr)
	}
	merged := digestLine.FindStringSubmatch(strings.TrimSpace(stdout))
	if merged == nil || merged[1] != repo+":1.0" {
		t.Fatalf("index create printed %q", stdout)
	}

	stdout, stderr, err = palletOut(t, "build", "-q", "-f", recipe, "-o", "registry:"+reg.Host+"/one/app:1.0", "--cache-dir", t.TempDir(), "--record", filepath.Join(t.TempDir(), "record.json"))
	if err != nil {
		t.Fatalf("one-machine build: %v\n%s", err, stderr)
	}
	one := digestLine.FindStringSubmatch(strings.TrimSpace(stdout))
	if one == nil {
		t.Fatalf("one-machine build printed %q", stdout)
	}
	if merged[2] != one[2] {
		t.Errorf("merged index %s, one-machine index %s", merged[2], one[2])
	}

	// Digests as arguments, one of them with its repository, give the same.
	stdout, stderr, err = palletOut(t, "index", "create", repo+":2.0", linux, repo+"@"+windows)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(stdout), "@"+one[2]) {
		t.Errorf("index create from digests: %q, %v\n%s", stdout, err, stderr)
	}
	_, _, err = palletOut(t, "index", "create", repo+":3.0", linux, linux)
	if err == nil || !strings.Contains(err.Error(), "linux/amd64") {
		t.Errorf("two entries for one platform: %v", err)
	}
	_, _, err = palletOut(t, "index", "create", repo+":3.0", "sha256:"+strings.Repeat("0", 64))
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a digest never pushed: %v", err)
	}
	if _, _, err := palletOut(t, "build", "-f", recipe, "-o", "registry:"+repo+":1.0", "--push-by-digest"); err == nil || !strings.Contains(err.Error(), "no tag") {
		t.Errorf("--push-by-digest to a tag: %v", err)
	}
	if _, _, err := palletOut(t, "build", "-f", recipe, "-o", "oci:"+filepath.Join(dir, "out"), "--push-by-digest"); err == nil || !strings.Contains(err.Error(), "registry output") {
		t.Errorf("--push-by-digest without a registry output: %v", err)
	}
}

// smallRecipe places one local file on base.
func smallRecipe(t *testing.T, base, content string) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hello.txt"), content)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  hello:
    local:
      path: hello.txt
    licenses: none
images:
  app:
    base: `+base+`
    platforms: [linux/amd64]
    files:
      - artifact: hello
        dest: /etc/hello.txt
`)
	return filepath.Join(dir, "pallet.yaml")
}

// --insecure reaches a registry whose certificate cannot be verified, for
// pushes, bases, the shared cache and inspect; without it, pallet refuses.
func TestInsecureRegistry(t *testing.T) {
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	// The refused handshakes are the point; keep them out of the log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	record := func() string { return filepath.Join(t.TempDir(), "record.json") }

	base := smallRecipe(t, "scratch", "base\n")
	_, _, err := palletOut(t, "build", "-f", base, "-o", "registry:"+host+"/base/img:1", "--record", record(), "--no-cache")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("push to an unverifiable registry without --insecure: %v", err)
	}
	if _, stderr, err := palletOut(t, "build", "--insecure", host, "-f", base, "-o", "registry:"+host+"/base/img:1", "--record", record(), "--no-cache"); err != nil {
		t.Fatalf("push with --insecure: %v\n%s", err, stderr)
	}

	app := smallRecipe(t, host+"/base/img:1", "app\n")
	args := []string{"build", "--insecure", host, "-f", app, "--record", record()}
	if _, stderr, err := palletOut(t, append(args, "-o", "registry:"+host+"/app/img:1", "--cache-dir", t.TempDir(), "--cache-to", "registry:"+host+"/cache:1")...); err != nil {
		t.Fatalf("build on a base from the registry, exporting the cache: %v\n%s", err, stderr)
	}
	_, stderr, err := palletOut(t, append(args, "-o", "registry:"+host+"/app/img:2", "--cache-dir", t.TempDir(), "--cache-from", "registry:"+host+"/cache:1", "--progress", "plain")...)
	if err != nil {
		t.Fatalf("build importing the cache: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr, "building without it") {
		t.Errorf("the shared cache was not read with --insecure:\n%s", stderr)
	}

	if _, _, err := palletOut(t, "inspect", host+"/app/img:1"); err == nil {
		t.Error("inspect reached an unverifiable registry without --insecure")
	}
	stdout, stderr, err := palletOut(t, "inspect", "--insecure", host, host+"/app/img:1")
	if err != nil || !strings.Contains(stdout, "linux/amd64") {
		t.Errorf("inspect --insecure: %v\n%s%s", err, stdout, stderr)
	}
	if _, _, err := palletOut(t, "inspect", "--insecure", "https://"+host, host+"/app/img:1"); err == nil {
		t.Error("--insecure with a URL was accepted")
	}
}

// withStdin runs fn with os.Stdin reading s.
func withStdin(t *testing.T, s string, fn func()) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Seek(0, 0)
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved; f.Close() }()
	fn()
}

// auth login writes what the next push uses; a refusal says whether
// credentials were found; auth logout removes them.
func TestAuthLoginLogout(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	config := filepath.Join(t.TempDir(), "docker")
	t.Setenv("DOCKER_CONFIG", config)
	reg := testregistry.StartWithAuth(t, "alice", "right")
	recipe := smallRecipe(t, "scratch", "private\n")
	push := func() error {
		_, _, err := palletOut(t, "build", "-f", recipe, "-o", "registry:"+reg.Host+"/private/app:1", "--no-cache", "--record", filepath.Join(t.TempDir(), "r.json"))
		return err
	}
	login := func(password string) {
		t.Helper()
		withStdin(t, password+"\n", func() {
			if _, stderr, err := palletOut(t, "auth", "login", reg.Host, "-u", "alice", "--password-stdin"); err != nil {
				t.Fatalf("auth login: %v\n%s", err, stderr)
			}
		})
	}
	if err := push(); err == nil || !strings.Contains(err.Error(), "found none") {
		t.Fatalf("push without credentials: %v", err)
	}
	login("wrong")
	if err := push(); err == nil || !strings.Contains(err.Error(), "refused the credentials pallet found") {
		t.Fatalf("push with wrong credentials: %v", err)
	}
	login("right")
	if err := push(); err != nil {
		t.Fatalf("push after login: %v", err)
	}
	if info, err := os.Stat(filepath.Join(config, "config.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("docker config: %v, %v", info, err)
	}

	_, stderr, err := palletOut(t, "auth", "login", reg.Host, "-u", "alice", "-p", "right")
	if err != nil || !strings.Contains(stderr, "--password-stdin") {
		t.Errorf("login with -p: %v, warning %q", err, stderr)
	}
	if _, _, err := palletOut(t, "auth", "login", reg.Host, "-u", "alice"); err == nil {
		t.Error("login without a password succeeded")
	}
	withStdin(t, "x", func() {
		if _, _, err := palletOut(t, "auth", "login", reg.Host, "-u", "alice", "-p", "x", "--password-stdin"); err == nil {
			t.Error("login with -p and --password-stdin succeeded")
		}
	})

	if _, stderr, err := palletOut(t, "auth", "logout", reg.Host); err != nil || !strings.Contains(stderr, "logged out") {
		t.Fatalf("logout: %v %s", err, stderr)
	}
	if err := push(); err == nil || !strings.Contains(err.Error(), "found none") {
		t.Fatalf("push after logout: %v", err)
	}
	if _, stderr, _ := palletOut(t, "auth", "logout", reg.Host); !strings.Contains(stderr, "no credentials") {
		t.Errorf("second logout: %s", stderr)
	}
}

// mountCounter counts, behind a registry, blob uploads (PATCH, PUT with a
// body) and mounts the registry accepted.
type mountCounter struct {
	next             http.Handler
	mu               sync.Mutex
	uploads, mounted int
}

func (m *mountCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	m.next.ServeHTTP(rec, r)
	m.mu.Lock()
	switch {
	case strings.Contains(r.URL.Path, "/blobs/uploads/") && r.Method == http.MethodPatch:
		m.uploads++
	case strings.Contains(r.URL.Path, "/blobs/uploads/") && r.Method == http.MethodPost && r.URL.Query().Get("mount") != "" && rec.Code == http.StatusCreated:
		m.mounted++
	}
	m.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

func (m *mountCounter) take() (uploads, mounted int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, n := m.uploads, m.mounted
	m.uploads, m.mounted = 0, 0
	return u, n
}

// A second push of a build to another repository of the same registry
// mounts every blob from the first instead of uploading it: the cache
// remembers where the first push put them. With another cache, nothing
// is remembered.
func TestRepeatPushMounts(t *testing.T) {
	counter := &mountCounter{}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler { counter.next = h; return counter })
	recipe := smallRecipe(t, "scratch", "mounted\n")
	cacheDir := t.TempDir()
	push := func(repo, cache string) string {
		t.Helper()
		out, stderr, err := palletOut(t, "build", "-f", recipe, "--cache-dir", cache, "--record", filepath.Join(t.TempDir(), "r.json"),
			"-q", "-o", "registry:"+reg.Host+"/"+repo+":1")
		if err != nil {
			t.Fatalf("push to %s: %v\n%s", repo, err, stderr)
		}
		return strings.TrimSpace(out)
	}
	first := push("first/app", cacheDir)
	if up, _ := counter.take(); up != 2 {
		t.Errorf("first push uploaded %d blobs, want 2 (layer and config)", up)
	}
	second := push("second/app", cacheDir)
	if up, mounted := counter.take(); up != 0 || mounted != 2 {
		t.Errorf("second push: %d uploads, %d mounts; want 0 and 2", up, mounted)
	}
	push("third/app", t.TempDir())
	if up, mounted := counter.take(); up != 2 || mounted != 0 {
		t.Errorf("push with another cache: %d uploads, %d mounts; want 2 and 0", up, mounted)
	}
	_, d1, _ := strings.Cut(first, "@")
	_, d2, _ := strings.Cut(second, "@")
	if d1 == "" || d1 != d2 {
		t.Fatalf("pushed %q and %q, want one digest", first, second)
	}
	ref, err := name.ParseReference(reg.Host + "/second/app:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Errorf("the mounted image does not pull whole: %v", err)
	}
}

// The recipe's limits.stall bounds the build's registry transfers, as it
// does its downloads: a base whose registry stops sending fails the
// build after it, not after the default minute.
func TestRecipeStallBoundsRegistryBase(t *testing.T) {
	var stalling atomic.Bool
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if stalling.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", "base\n"), "--no-cache", "-o", "registry:"+reg.Host+"/base:1", "--record", filepath.Join(t.TempDir(), "record.json"))
	stalling.Store(true)
	recipe := smallRecipe(t, reg.Host+"/base:1", "app\n")
	b, err := os.ReadFile(recipe)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, recipe, strings.Replace(string(b), "version: 1\n", "version: 1\nlimits:\n  stall: 300ms\n", 1))
	start := time.Now()
	_, _, err = palletOut(t, "build", "-q", "-f", recipe, "--no-cache", "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil || !strings.Contains(err.Error(), "stalled: nothing moved for 300ms") {
		t.Fatalf("a base whose blobs never come: %v", err)
	}
	// go-containerregistry retries a stall twice, after 1s and 3s.
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("the build failed after %s, with limits.stall 300ms", elapsed)
	}
}

// The recipe's limits.stall bounds the entries of a --cache-from registry
// too: an entry the registry never sends is given up after it, asked for
// once (a cache only saves work: its stall is not retried), and the build
// does the work itself.
func TestRecipeStallBoundsRegistryCacheEntry(t *testing.T) {
	var (
		stalling atomic.Bool
		mu       sync.Mutex
		gets     = map[string]int{}
	)
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if stalling.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				mu.Lock()
				gets[r.URL.Path]++
				mu.Unlock()
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	cacheRef := "registry:" + reg.Host + "/ci/stalled-cache:main"
	recipe := smallRecipe(t, "scratch", "app\n")
	first := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "--cache-to", cacheRef, "-o", "oci:"+first)
	b, err := os.ReadFile(recipe)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, recipe, strings.Replace(string(b), "version: 1\n", "version: 1\nlimits:\n  stall: 300ms\n", 1))
	stalling.Store(true)
	second := filepath.Join(t.TempDir(), "out")
	_, out, err := palletOut(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", t.TempDir(), "--cache-from", cacheRef, "-o", "oci:"+second)
	if err != nil {
		t.Fatalf("a build whose shared cache never sends its entries: %v\n%s", err, out)
	}
	if !strings.Contains(out, "not used") || !strings.Contains(out, "nothing moved for 300ms") {
		t.Errorf("no warning of an entry stalled for limits.stall:\n%s", out)
	}
	mu.Lock()
	if len(gets) == 0 {
		t.Error("no entry was asked for")
	}
	for path, n := range gets {
		if n != 1 {
			t.Errorf("%s was asked for %d times", path, n)
		}
	}
	mu.Unlock()
	if a, b := layoutIndex(t, first).Manifests[0].Digest, layoutIndex(t, second).Manifests[0].Digest; a != b {
		t.Errorf("the build without its cache made %s, the first %s", b, a)
	}
}

// requestLog keeps, behind a registry, the order of blob commits (PUT
// ...?digest=D, as "blob D") and manifest requests ("manifest METHOD").
type requestLog struct {
	next   http.Handler
	mu     sync.Mutex
	events []string
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	switch {
	case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/"):
		l.events = append(l.events, "blob "+r.URL.Query().Get("digest"))
	case strings.Contains(r.URL.Path, "/manifests/"):
		l.events = append(l.events, "manifest "+r.Method)
	}
	l.mu.Unlock()
	l.next.ServeHTTP(w, r)
}

// A push uploads the image's config with its layers, while the build
// goes on, not after them: by the time the push writes the manifest,
// every blob is up, and the push ends with the manifest's requests alone.
func TestPushUploadsConfigEarly(t *testing.T) {
	reqs := &requestLog{}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler { reqs.next = h; return reqs })
	recipe := smallRecipe(t, "scratch", "config early\n")
	ref := reg.Host + "/early/config:1"
	if _, stderr, err := palletOut(t, "build", "-f", recipe, "--cache-dir", t.TempDir(), "--record", filepath.Join(t.TempDir(), "r.json"),
		"-q", "-o", "registry:"+ref); err != nil {
		t.Fatalf("push: %v\n%s", err, stderr)
	}
	img, err := remote.Image(mustRef(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	reqs.mu.Lock()
	events := slices.Clone(reqs.events)
	reqs.mu.Unlock()
	blob := slices.Index(events, "blob "+cfg.String())
	manifest := slices.IndexFunc(events, func(e string) bool { return strings.HasPrefix(e, "manifest ") })
	if blob < 0 || manifest < 0 || blob > manifest {
		t.Errorf("the config %s was not committed before the first manifest request: %v", cfg, events)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// A registry that resets the connection on one layer's upload: the push
// fails naming the layer's digest, the line that places it and the line
// that declares the image, moves no tag, and once the registry recovers
// the same build pushes, uploading only that layer.
func TestPushFailureNamesLayerAndLine(t *testing.T) {
	var (
		failing atomic.Bool
		patches atomic.Int32
	)
	failing.Store(true)
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPatch {
				patches.Add(1)
				// Only the large layer is over 32 KiB.
				if failing.Load() && r.ContentLength > 32<<10 {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						panic(err)
					}
					conn.Close()
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	big := make([]byte, 64<<10)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "small.txt"), "small\n")
	writeFile(t, filepath.Join(dir, "big.bin"), string(big))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  small: {local: {path: small.txt}, licenses: none}
  big: {local: {path: big.bin}, licenses: none}
images:
  app:
    tags: ["1", latest]
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: small
        dest: /small.txt
      - artifact: big
        dest: /big.bin
`)
	args := []string{"build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "--record", filepath.Join(t.TempDir(), "r.json"), "-o", "registry:" + reg.Host + "/fail/app"}
	_, _, err := palletOut(t, args...)
	if err == nil {
		t.Fatal("the push succeeded though the registry never took the large layer")
	}
	for _, want := range []string{
		"image app at " + recipe + ":6",
		"upload sha256:",
		"(layer placing big of linux/amd64, linux/arm64, " + recipe + ":13)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	for _, tag := range []string{"1", "latest"} {
		if _, err := remote.Head(mustRef(t, reg.Host+"/fail/app:"+tag)); err == nil {
			t.Errorf("tag %s was set by a push that failed", tag)
		}
	}

	failing.Store(false)
	patches.Store(0)
	stdout, stderr, err := palletOut(t, args...)
	if err != nil {
		t.Fatalf("the push once the registry recovered: %v\n%s", err, stderr)
	}
	if n := patches.Load(); n != 1 {
		t.Errorf("the second push uploaded %d blobs, want 1 (the layer the first could not)", n)
	}
	m := digestLine.FindStringSubmatch(strings.TrimSpace(strings.Split(stdout, "\n")[0]))
	if m == nil {
		t.Fatalf("the push printed %q", stdout)
	}
	for _, tag := range []string{"1", "latest"} {
		idx, err := remote.Index(mustRef(t, reg.Host+"/fail/app:"+tag))
		if err != nil {
			t.Fatal(err)
		}
		if d, err := idx.Digest(); err != nil || d.String() != m[2] {
			t.Errorf("tag %s is %v, the push printed %s", tag, d, m[2])
		}
		if err := validate.Index(idx); err != nil {
			t.Errorf("tag %s does not pull whole: %v", tag, err)
		}
	}
}

// TestRecordWrittenBesideThePush: the build record is written while the
// push runs and put in place once the push is done. When the registry
// takes the manifest, the push's last request, the record is whole
// beside its path and not yet at it; after the build it is at its path
// with nothing beside it. A push whose manifest is refused leaves
// neither.
func TestRecordWrittenBesideThePush(t *testing.T) {
	var refuse atomic.Bool
	var recDir atomic.Value // the record's directory of the build running
	var mu sync.Mutex
	var atManifest []string // what the record's directory held at each manifest PUT
	var stagedRecord []byte
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
				dir := recDir.Load().(string)
				// The record is written beside the push, which may be
				// the quicker of the two: wait for it, or for nothing.
				var names []string
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					names = names[:0]
					ents, _ := os.ReadDir(dir)
					whole := false
					for _, e := range ents {
						// The staged record's lock, which says a
						// running build owns it, is not a second file
						// of the record.
						if base, ok := strings.CutSuffix(e.Name(), ".lock"); ok && slices.ContainsFunc(ents, func(o os.DirEntry) bool { return o.Name() == base }) {
							continue
						}
						names = append(names, e.Name())
						if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && json.Valid(data) {
							whole = true
							mu.Lock()
							stagedRecord = data
							mu.Unlock()
						}
					}
					if whole {
						break
					}
				}
				mu.Lock()
				atManifest = append(atManifest, strings.Join(names, ","))
				mu.Unlock()
				if refuse.Load() {
					http.Error(w, `{"errors":[{"code":"MANIFEST_INVALID","message":"refused by the test"}]}`, http.StatusBadRequest)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	cache := t.TempDir()
	build := func(recPath, tag string) error {
		recDir.Store(filepath.Dir(recPath))
		_, _, err := palletOut(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache,
			"--record", recPath, "-o", "registry:"+reg.Host+"/staged/app:"+tag)
		return err
	}

	rec := filepath.Join(t.TempDir(), "record.json")
	if err := build(rec, "v1"); err != nil {
		t.Fatal(err)
	}
	if len(atManifest) != 1 || atManifest[0] == "" || strings.Contains(atManifest[0], ",") || stagedRecord == nil {
		t.Fatalf("when the registry took the manifest the record's directory held %q, want one file holding the whole record", atManifest)
	}
	if atManifest[0] == "record.json" {
		t.Errorf("the record was in place before the push was done")
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, stagedRecord) {
		t.Errorf("the record put in place is not the one written beside the push")
	}
	if ents, _ := os.ReadDir(filepath.Dir(rec)); len(ents) != 1 {
		t.Errorf("the record's directory holds %d entries after the build, want the record alone", len(ents))
	}

	refuse.Store(true)
	// In a directory the build makes: a failed push leaves it as the
	// record was to be written after the push, not made.
	failedTop := t.TempDir()
	failed := filepath.Join(failedTop, "new", "record.json")
	// Another tag, which the registry does not hold: the push sends the
	// manifest.
	if err := build(failed, "v2"); err == nil {
		t.Fatal("the push succeeded though the registry refused its manifest")
	}
	if ents, _ := os.ReadDir(failedTop); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("a push that failed left %v beside its record's path", names)
	}
}

// TestInterruptedPushLeavesNoRecord: Ctrl-C while the push waits on the
// registry, the record staged beside its path by then, stops the build
// with nothing beside the record's path (the staged record is
// discarded) and the record of an earlier build left as it was.
func TestInterruptedPushLeavesNoRecord(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals are Unix's")
	}
	recDir := t.TempDir()
	rec := filepath.Join(recDir, "record.json")
	earlier := `{"recipe": "pallet.yaml", "epoch": 1}` + "\n"
	writeFile(t, rec, earlier)
	staged := make(chan struct{}, 1)
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/manifests/") {
				h.ServeHTTP(w, r)
				return
			}
			// Held until the build is stopped, once the record is
			// whole beside its path. The manifest is read first: the
			// server sees the client go only once it has the body.
			io.Copy(io.Discard, r.Body)
			for {
				ents, _ := os.ReadDir(recDir)
				whole := false
				for _, e := range ents {
					data, err := os.ReadFile(filepath.Join(recDir, e.Name()))
					whole = whole || e.Name() != "record.json" && err == nil && json.Valid(data)
				}
				if whole {
					break
				}
				select {
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			select {
			case staged <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		})
	})
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPalletProcess$")
	cmd.Env = append(os.Environ(), "PALLET_TEST_PROCESS_ARGS="+strings.Join([]string{"build", "-q", "-f", filepath.Join(dir, "pallet.yaml"),
		"--cache-dir", t.TempDir(), "--record", rec, "-o", "registry:" + reg.Host + "/stopped/app:v1"}, "\n"), "TMPDIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-staged:
	case <-ctx.Done():
		t.Fatalf("the push never sent its manifest with the record staged\nstderr: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("pallet ended with %v, want exit 130\nstderr: %s", err, stderr.String())
	}
	ents, _ := os.ReadDir(recDir)
	if len(ents) != 1 || ents[0].Name() != "record.json" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the record's directory holds %v after the interrupted push, want record.json alone", names)
	}
	if data, err := os.ReadFile(rec); err != nil || string(data) != earlier {
		t.Errorf("the earlier build's record is now %q (%v)", data, err)
	}
}
