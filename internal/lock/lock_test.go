package lock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// site is a release server whose files a test can change, as upstream
// re-publishing a release would.
type site struct {
	mu    sync.Mutex
	files map[string][]byte
	// hook, when set, runs before each request is answered.
	hook func(path string)
	*httptest.Server
}

func newSite(t *testing.T, files map[string][]byte) *site {
	s := &site{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		files, hook := maps.Clone(s.files), s.hook
		s.mu.Unlock()
		if hook != nil {
			hook(r.URL.Path)
		}
		fixture.Handler(files).ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) set(path string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = body
}

// gitRepo is a local repository with commits and tags made by git.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *gitRepo {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is not installed; .ci/run must install it")
		}
		t.Skip("git is not installed")
	}
	g := &gitRepo{t: t, dir: t.TempDir()}
	g.run("init", "-q", "-b", "main")
	return g
}

func (g *gitRepo) run(args ...string) string {
	g.t.Helper()
	return fixture.Git(g.t, g.dir, args...)
}

// commit makes a commit and returns its hash.
func (g *gitRepo) commit(msg string) string {
	g.run("commit", "-q", "--allow-empty", "-m", msg)
	return g.run("rev-parse", "HEAD")
}

func (g *gitRepo) url() string { return "file://" + g.dir }

func fetcher(t *testing.T) *artifact.Fetcher {
	f := artifact.New()
	f.Client = &http.Client{Timeout: 10 * time.Second}
	f.Backoff = time.Millisecond
	f.Log = t.Logf
	t.Cleanup(func() { f.Close() }) // the module proxy gate, if a go command started it
	return f
}

// commented is a recipe as people write them: comments on their own
// lines and after values, quoted and plain strings, flow and block
// mappings, blank lines. Lock must add the pins and change nothing else.
const commented = `# A recipe with comments everywhere; lock adds pins and nothing else.
version: 1   # the format

args:
  V: "1.0"          # upstream version
  REL: "SRV"

artifacts:
  # a download the same on every platform
  data:
    url:
      url: "{{REL}}/data-{{V}}.tar"   # quoted, with a comment
      filename: data.tar

  cni:
    url:
      url: '{{REL}}/cni-{{os}}-{{arch}}-{{V}}.tgz'
      checksums: "{{REL}}/SHA256SUMS"
      # keep this comment where it is
      extract: {strip: 1}
  tool:
    version: "2.0"
    default: source
    modes:
      source:
        git:
          repo: "GIT"
          tag: v{{version}}   # upstream tag
        go:
          packages: .
          ldflags: ["-X main.commit={{commit}}"]
      release:
        url: "{{REL}}/tool-{{version}}-{{arch}}"
        sha256:
          linux/amd64: ""     # to be filled
  flowy:
    default: source
    modes:
      source: {git: {repo: "GIT", tag: v2.0}, go: {packages: .}}

images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: data
        dest: /data/
      - {artifact: cni, dest: /cni/}
      - artifact: tool
        dest: /bin/
        platforms: [linux/amd64]   # so its release serves amd64 alone
      - artifact: flowy
        dest: /flowy/
`

// world is a recipe with its upstream: a release site and a repository.
type world struct {
	file    string
	site    *site
	repo    *gitRepo
	commit  string
	src     string
	payload map[string][]byte
}

func newWorld(t *testing.T) *world {
	w := &world{repo: newRepo(t)}
	w.repo.commit("first")
	w.commit = w.repo.commit("v2.0")
	w.repo.run("tag", "-a", "-m", "release 2.0", "v2.0")
	w.payload = map[string][]byte{
		"/data-1.0.tar":            fixture.Tar([]fixture.File{{Name: "data.txt", Content: "data"}}),
		"/cni-linux-amd64-1.0.tgz": fixture.TarGz([]fixture.File{{Name: "cni/host-local", Content: "amd64"}}),
		"/cni-linux-arm64-1.0.tgz": fixture.TarGz([]fixture.File{{Name: "cni/host-local", Content: "arm64"}}),
		"/tool-2.0-amd64":          []byte("tool for amd64"),
	}
	files := maps.Clone(w.payload)
	files["/SHA256SUMS"] = []byte(fixture.SHA256(w.payload["/cni-linux-amd64-1.0.tgz"]) + "  cni-linux-amd64-1.0.tgz\n" +
		fixture.SHA256([]byte("other")) + "  other.tgz\n" +
		fixture.SHA256(w.payload["/cni-linux-arm64-1.0.tgz"]) + " *dist/cni-linux-arm64-1.0.tgz\n")
	w.site = newSite(t, files)
	w.src = strings.NewReplacer("SRV", w.site.URL, `"GIT"`, `"`+w.repo.url()+`"`).Replace(commented)
	w.file = filepath.Join(t.TempDir(), "pallet.yaml")
	if err := os.WriteFile(w.file, []byte(w.src), 0o640); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) sum(p string) string { return fixture.SHA256(w.payload[p]) }

// locked is the recipe as lock must leave it: the original with the pins
// added at their places, byte for byte.
func (w *world) locked() string {
	return strings.NewReplacer(
		`      url: "{{REL}}/data-{{V}}.tar"   # quoted, with a comment`+"\n",
		`      url: "{{REL}}/data-{{V}}.tar"   # quoted, with a comment`+"\n      sha256: "+w.sum("/data-1.0.tar")+"\n",
		`      url: '{{REL}}/cni-{{os}}-{{arch}}-{{V}}.tgz'`+"\n",
		`      url: '{{REL}}/cni-{{os}}-{{arch}}-{{V}}.tgz'`+"\n      sha256:\n        linux/amd64: "+w.sum("/cni-linux-amd64-1.0.tgz")+"\n        linux/arm64: "+w.sum("/cni-linux-arm64-1.0.tgz")+"\n",
		`          repo: "`+w.repo.url()+`"`+"\n",
		`          repo: "`+w.repo.url()+`"`+"\n          commit: "+w.commit+"\n",
		`linux/amd64: ""     # to be filled`,
		`linux/amd64: "`+w.sum("/tool-2.0-amd64")+`"     # to be filled`,
		`{git: {repo: "`+w.repo.url()+`", tag: v2.0}`,
		`{git: {repo: "`+w.repo.url()+`", commit: `+w.commit+`, tag: v2.0}`,
	).Replace(w.src)
}

func (w *world) lock(t *testing.T, opt Options) (*Report, error) {
	t.Helper()
	opt.File = w.file
	opt.Fetcher = fetcher(t)
	opt.Log = t.Logf
	return Run(context.Background(), opt)
}

func (w *world) read(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(w.file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLockWritesPinsAndNothingElse(t *testing.T) {
	w := newWorld(t)
	rep, err := w.lock(t, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.read(t), w.locked(); got != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", got, want)
	}
	if !rep.Written || len(rep.Findings) != 6 {
		t.Errorf("report: written %v, %d findings: %v", rep.Written, len(rep.Findings), rep.Findings)
	}
	// A build reads what lock wrote: every pin is there.
	if _, err := recipe.Parse(w.file, []byte(w.read(t))); err != nil {
		t.Errorf("the locked recipe does not parse for a build: %v", err)
	}
	// The file keeps its mode; nothing is left beside it.
	fi, err := os.Stat(w.file)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after lock: %v, %v", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(w.file)); len(ents) != 1 {
		t.Errorf("%d files beside the recipe", len(ents))
	}

	// Locked, it checks clean and a second lock changes nothing.
	rep, err = w.lock(t, Options{Check: true})
	if err != nil || len(rep.Findings) != 0 || rep.Current != 7 {
		t.Errorf("check after lock: %v, %+v", err, rep)
	}
	before := w.read(t)
	if rep, err := w.lock(t, Options{}); err != nil || rep.Written || w.read(t) != before {
		t.Errorf("second lock: %v, %+v", err, rep)
	}
}

// --check writes nothing and fails with every missing pin at its line.
func TestCheckMissing(t *testing.T) {
	w := newWorld(t)
	_, err := w.lock(t, Options{Check: true})
	var pe *PinsError
	if !errors.As(err, &pe) {
		t.Fatalf("check of an unlocked recipe: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"6 pin(s) missing, 0 stale",
		w.file + ":11: artifact data: no sha256 (" + w.site.URL + "/data-1.0.tar gives " + w.sum("/data-1.0.tar") + ")",
		w.file + ":16: artifact cni: no sha256 for linux/arm64",
		w.file + ":26: artifact tool: no commit of tag v2.0 (" + w.repo.url() + " gives " + w.commit + ")",
		w.file + ":35: artifact tool: no sha256 for linux/amd64",
		w.file + ":39: artifact flowy: no commit of tag v2.0",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("check output lacks %q:\n%s", want, msg)
		}
	}
	if w.read(t) != w.src {
		t.Error("--check wrote the recipe")
	}
}

// A tag moved upstream is reported with both commits, at its line, and
// never re-pinned silently: the recipe stays as it is until --update.
func TestMovedTag(t *testing.T) {
	w := newWorld(t)
	if _, err := w.lock(t, Options{}); err != nil {
		t.Fatal(err)
	}
	locked := w.read(t)
	moved := w.repo.commit("v2.0, again")
	w.repo.run("tag", "-f", "-a", "-m", "moved", "v2.0")

	for _, opt := range []Options{{}, {Check: true}} {
		_, err := w.lock(t, opt)
		var pe *PinsError
		if !errors.As(err, &pe) || len(pe.Findings) != 2 {
			t.Fatalf("lock %+v after the tag moved: %v", opt, err)
		}
		want := w.file + ":32: artifact tool: commit of tag v2.0 is " + w.commit + " in the recipe, but " + w.repo.url() + " now gives " + moved
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lock %+v: error lacks %q:\n%v", opt, want, err)
		}
		if w.read(t) != locked {
			t.Errorf("lock %+v re-pinned a moved tag without --update", opt)
		}
	}

	rep, err := w.lock(t, Options{Update: true})
	if err != nil || !rep.Written {
		t.Fatalf("--update: %v, %+v", err, rep)
	}
	if got, want := w.read(t), strings.ReplaceAll(locked, w.commit, moved); got != want {
		t.Errorf("after --update:\n%s\nwant:\n%s", got, want)
	}
}

// A download re-published with other bytes is stale like a moved tag.
func TestChangedDownload(t *testing.T) {
	w := newWorld(t)
	if _, err := w.lock(t, Options{}); err != nil {
		t.Fatal(err)
	}
	locked := w.read(t)
	changed := []byte("re-published arm64")
	w.site.set("/cni-linux-arm64-1.0.tgz", changed)
	w.site.set("/SHA256SUMS", []byte(w.sum("/cni-linux-amd64-1.0.tgz")+"  cni-linux-amd64-1.0.tgz\n"+fixture.SHA256(changed)+"  cni-linux-arm64-1.0.tgz\n"))

	_, err := w.lock(t, Options{})
	want := "artifact cni: sha256 for linux/arm64 is " + w.sum("/cni-linux-arm64-1.0.tgz") + " in the recipe, but " + w.site.URL + "/cni-linux-arm64-1.0.tgz now gives " + fixture.SHA256(changed)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("lock after a re-publish: %v\nwant %q", err, want)
	}
	if w.read(t) != locked {
		t.Error("a changed download was re-pinned without --update")
	}
	// Only arm64 is selected: amd64's pin is not even looked at.
	if _, err := w.lock(t, Options{Update: true, Platforms: []string{"linux/amd64"}}); err != nil || w.read(t) != locked {
		t.Errorf("--update --platform linux/amd64: %v", err)
	}
	if _, err := w.lock(t, Options{Update: true, Artifacts: []string{"cni"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := w.read(t), strings.Replace(locked, w.sum("/cni-linux-arm64-1.0.tgz"), fixture.SHA256(changed), 1); got != want {
		t.Errorf("after --update:\n%s\nwant:\n%s", got, want)
	}
}

// A download that disagrees with upstream's checksum file pins nothing,
// and the error names both URLs and both digests.
func TestChecksumMismatch(t *testing.T) {
	w := newWorld(t)
	bogus := fixture.SHA256([]byte("not the archive"))
	w.site.set("/SHA256SUMS", []byte(w.sum("/cni-linux-amd64-1.0.tgz")+"  cni-linux-amd64-1.0.tgz\n"+bogus+"  cni-linux-arm64-1.0.tgz\n"))
	_, err := w.lock(t, Options{})
	if err == nil {
		t.Fatal("lock pinned a download its checksum file disagrees with")
	}
	for _, want := range []string{w.file + ":18:", w.site.URL + "/cni-linux-arm64-1.0.tgz", w.sum("/cni-linux-arm64-1.0.tgz"), w.site.URL + "/SHA256SUMS", bogus} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if w.read(t) != w.src {
		t.Error("the recipe was written despite the mismatch")
	}
}

// A recipe that is no longer the file lock read when it comes to write
// (edited, replaced by a link, made read-only meanwhile) is left as it
// is, and so is what a link put in its place names.
func TestRecipeChangedWhileLocking(t *testing.T) {
	for _, tc := range []struct {
		name string
		// meddle changes the recipe while lock downloads.
		meddle func(t *testing.T, w *world, elsewhere string)
		want   string
	}{
		{"edited", func(t *testing.T, w *world, _ string) {
			if err := os.WriteFile(w.file, []byte(w.src+"# edited\n"), 0o640); err != nil {
				t.Error(err)
			}
		}, "changed while pallet lock ran"},
		{"replaced by a link", func(t *testing.T, w *world, elsewhere string) {
			if err := os.Remove(w.file); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(elsewhere, w.file); err != nil {
				t.Error(err)
			}
		}, "nothing written"},
		{"made read-only", func(t *testing.T, w *world, _ string) {
			if err := os.Chmod(w.file, 0o444); err != nil {
				t.Error(err)
			}
		}, "is read-only (mode 0444)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			elsewhere := filepath.Join(t.TempDir(), "pallet.yaml")
			if err := os.WriteFile(elsewhere, []byte(w.src), 0o640); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			w.site.mu.Lock()
			w.site.hook = func(string) { once.Do(func() { tc.meddle(t, w, elsewhere) }) }
			w.site.mu.Unlock()
			_, err := w.lock(t, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), w.file) {
				t.Errorf("lock: %v, want an error naming %s and saying %q", err, w.file, tc.want)
			}
			after, err := os.Lstat(w.file)
			if err != nil {
				t.Fatal(err)
			}
			if link := after.Mode()&os.ModeSymlink != 0; link != (tc.name == "replaced by a link") {
				t.Errorf("the recipe's place now holds a %v", after.Mode())
			}
			if got := w.read(t); strings.Contains(got, w.sum("/data-1.0.tar")) {
				t.Errorf("pins written into the recipe:\n%s", got)
			}
			if got, _ := os.ReadFile(elsewhere); string(got) != w.src {
				t.Errorf("the file the link names was written:\n%s", got)
			}
			if ents, _ := os.ReadDir(filepath.Dir(w.file)); len(ents) != 1 {
				t.Errorf("left beside the recipe: %v", ents)
			}
		})
	}
}

// A lock stopped half-way, cancelled or by a server failing after some
// pins were resolved, leaves the recipe as it was and nothing beside it:
// what it resolved is written all at once or not at all.
func TestInterruptedLockLeavesRecipe(t *testing.T) {
	for _, cancelled := range []bool{true, false} {
		w := newWorld(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n int
		w.site.mu.Lock()
		w.site.hook = func(string) {
			// The first downloads answered, then the stop.
			if n++; n == 3 {
				if cancelled {
					cancel()
				} else {
					w.site.mu.Lock()
					w.site.files = map[string][]byte{} // all not found
					w.site.mu.Unlock()
				}
			}
		}
		w.site.mu.Unlock()
		_, err := Run(ctx, Options{File: w.file, Fetcher: fetcher(t), Log: t.Logf})
		if err == nil {
			t.Fatalf("cancelled %v: lock stopped half-way succeeded", cancelled)
		}
		if !strings.Contains(err.Error(), "artifact cni") {
			t.Errorf("cancelled %v: %v, want the artifact named", cancelled, err)
		}
		if got := w.read(t); got != w.src {
			t.Errorf("cancelled %v: the recipe was written:\n%s", cancelled, got)
		}
		if ents, _ := os.ReadDir(filepath.Dir(w.file)); len(ents) != 1 {
			t.Errorf("cancelled %v: left beside the recipe: %v", cancelled, ents)
		}
	}
}

// --platform and --artifact narrow what is resolved and written.
func TestSelection(t *testing.T) {
	w := newWorld(t)
	if _, err := w.lock(t, Options{Artifacts: []string{"cni"}, Platforms: []string{"linux/arm64"}}); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(w.src, `      url: '{{REL}}/cni-{{os}}-{{arch}}-{{V}}.tgz'`+"\n",
		`      url: '{{REL}}/cni-{{os}}-{{arch}}-{{V}}.tgz'`+"\n      sha256:\n        linux/arm64: "+w.sum("/cni-linux-arm64-1.0.tgz")+"\n", 1)
	if got := w.read(t); got != want {
		t.Fatalf("after --artifact cni --platform linux/arm64:\n%s", got)
	}
	// The other platform joins the map, after the entry already there.
	if _, err := w.lock(t, Options{Artifacts: []string{"cni"}}); err != nil {
		t.Fatal(err)
	}
	arm := "        linux/arm64: " + w.sum("/cni-linux-arm64-1.0.tgz") + "\n"
	want = strings.Replace(want, arm, arm+"        linux/amd64: "+w.sum("/cni-linux-amd64-1.0.tgz")+"\n", 1)
	if got := w.read(t); got != want {
		t.Errorf("after --artifact cni:\n%s\nwant:\n%s", got, want)
	}
	if _, err := w.lock(t, Options{Artifacts: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "artifact nope: not in") {
		t.Errorf("--artifact nope: %v", err)
	}
}

// A symlinked recipe is followed: the target is rewritten, the link kept.
func TestSymlinkedRecipe(t *testing.T) {
	w := newWorld(t)
	link := filepath.Join(t.TempDir(), "pallet.yaml")
	if err := os.Symlink(w.file, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{File: link, Fetcher: fetcher(t)}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if w.read(t) != w.locked() {
		t.Error("the link's target was not locked")
	}
}

// --update keeps the recipe's form where it still holds and refines it
// where it does not: a single digest wrong for one platform becomes one
// per platform (unresolved platforms keep the old one), an OS entry gets
// a platform entry beside it.
func TestUpdateRefinesForm(t *testing.T) {
	files := map[string][]byte{"/f-amd64": []byte("amd64"), "/f-arm64": []byte("arm64"), "/same": []byte("same")}
	s := newSite(t, files)
	amd, arm, same := fixture.SHA256(files["/f-amd64"]), fixture.SHA256(files["/f-arm64"]), fixture.SHA256(files["/same"])
	old := fixture.SHA256([]byte("old"))
	const tmpl = "version: 1\nartifacts:\n  f:\n    url:\n      url: URL\n      sha256: PIN\nimages:\n  i:\n    base: scratch\n    platforms: [linux/amd64, linux/arm64]\n    files: [{artifact: f, dest: /f/}]\n"
	for _, tc := range []struct {
		name, url, pin string
		platforms      []string
		// want is what follows "sha256:" once locked.
		want string
	}{
		{"one digest, wrong for arm64", s.URL + "/f-{{arch}}", amd, nil, "\n        linux/amd64: " + amd + "\n        linux/arm64: " + arm},
		{"one digest, arm64 alone resolved", s.URL + "/f-{{arch}}", amd, []string{"linux/arm64"}, "\n        linux/amd64: " + amd + "\n        linux/arm64: " + arm},
		{"one digest, both wrong", s.URL + "/same?{{arch}}", old, nil, " " + same},
		{"an OS entry", s.URL + "/f-{{arch}}", "{linux: " + amd + "}", nil, " {linux: " + amd + ", linux/arm64: " + arm + "}"},
		{"a URL the same everywhere", s.URL + "/same", old, []string{"linux/arm64"}, " " + same},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pallet.yaml")
			src := strings.NewReplacer("URL", tc.url, "PIN", tc.pin).Replace(tmpl)
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(context.Background(), Options{File: file, Update: true, Platforms: tc.platforms, Fetcher: fetcher(t)}); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(file)
			if want := strings.Replace(src, "sha256: "+tc.pin, "sha256:"+tc.want, 1); string(got) != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			if _, err := recipe.Parse(file, got); err != nil {
				t.Error(err)
			}
		})
	}
}

// A pin YAML shares between two artifacts (an anchor taken in with a
// merge key) is not rewritten for the one selected: the other's pin
// would change with it, so lock refuses and writes nothing.
func TestSharedPinNotRewrittenForOne(t *testing.T) {
	old, changed := []byte("first"), []byte("re-published")
	site := newSite(t, map[string][]byte{"/a.bin": old, "/b.bin": old})
	src := strings.ReplaceAll(`version: 1
artifacts:
  a:
    url: &dl {url: SRV/a.bin, sha256: `+fixture.SHA256(old)+`}
    licenses: none
  b:
    url: {<<: *dl, url: SRV/b.bin}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, dest: /a/}
      - {artifact: b, dest: /b/}
`, "SRV", site.URL)
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	site.set("/a.bin", changed)
	_, err := Run(context.Background(), Options{File: file, Fetcher: fetcher(t), Log: t.Logf, Update: true, Artifacts: []string{"a"}})
	if err == nil || !strings.Contains(err.Error(), "artifact b") {
		t.Errorf("re-pinning a's shared sha256: %v, want a refusal naming b", err)
	}
	if got, _ := os.ReadFile(file); string(got) != src {
		t.Errorf("the recipe was rewritten:\n%s", got)
	}
}

// A download pinned from its own bytes, no checksum file vouching for
// them, is said to be so, each at its line, for a user to review; one
// checked against upstream's checksum file is not.
func TestLockSaysUncheckedPins(t *testing.T) {
	w := newWorld(t)
	var (
		mu    sync.Mutex
		lines []string
	)
	opt := Options{File: w.file, Fetcher: fetcher(t), Log: func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, a...))
	}}
	if _, err := Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	unchecked := map[string]bool{}
	summary := false
	for _, l := range lines {
		switch {
		case strings.Contains(l, "no checksum file to check them against"):
			for _, u := range []string{"/data-1.0.tar", "/tool-2.0-amd64", "/cni-"} {
				if strings.Contains(l, w.site.URL+u) {
					unchecked[u] = true
				}
			}
		case strings.Contains(l, "2 pin(s) above were taken from what their URL served"):
			summary = true
		}
	}
	if !unchecked["/data-1.0.tar"] || !unchecked["/tool-2.0-amd64"] || unchecked["/cni-"] || !summary {
		t.Errorf("unchecked pins said: %v, summary %v; want data and tool alone, and the count:\n%s", unchecked, summary, strings.Join(lines, "\n"))
	}
}

// A checksum file trickling just above the watchdog's floor held pallet
// lock for as long as its size limit took; the recipe's
// limits.download-timeout ends it, at the checksums line, saying what
// arrived.
func TestLockChecksumsTrickleTimesOut(t *testing.T) {
	body := []byte("tool")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a.tgz" {
			w.Write(body)
			return
		}
		for {
			if _, err := w.Write([]byte(strings.Repeat("#", 63) + "\n")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	src := `version: 1
limits:
  stall: 100ms
  download-timeout: 300ms
artifacts:
  a:
    url:
      url: SRV/a.tgz
      checksums: SRV/SHA256SUMS
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: a, dest: /a/}
`
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(src, "SRV", srv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, Options{File: file, Fetcher: fetcher(t)})
	if err == nil || !strings.Contains(err.Error(), file+":9:") || !strings.Contains(err.Error(), "download "+srv.URL+"/SHA256SUMS: gave up after") ||
		!strings.Contains(err.Error(), "over the 300ms one download may take") || !strings.Contains(err.Error(), "bytes received") {
		t.Fatalf("err = %v", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("took %s", elapsed)
	}
	t.Log(err)
}
