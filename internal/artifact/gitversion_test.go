package artifact_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
)

// A build from a commit pinned with a tag that is a version of the module
// names the main module by that tag and stamps the commit, as a build in
// upstream's clone at the tag does: go version -m shows the version, not
// (devel), for scanners to match. Only the recipe's tag counts, however
// the commit was fetched: a fetch of the whole repository (a dumb-HTTP
// server) brings upstream's other tags, one of them higher on the same
// commit, and the binary is still the one a shallow fetch gives.
func TestGitBuildStampsTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo, commit := committedRepo(t, map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {}\n",
	})
	fixture.Git(t, repo, "tag", "-a", "-m", "v1.2.0", "v1.2.0")
	fixture.Git(t, repo, "tag", "v1.2.1")
	fixture.Git(t, repo, "tag", "release-1.2")
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\nfunc main() { println() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "commit", "-q", "-am", "later")
	fixture.Git(t, repo, "tag", "v1.3.0")

	// The dumb protocol: a bare copy's files, served as they are.
	bare := filepath.Join(t.TempDir(), "app.git")
	fixture.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	fixture.Git(t, bare, "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(bare)))
	t.Cleanup(srv.Close)

	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	build := func(from, tag string) *artifact.Result {
		t.Helper()
		k := &artifact.Git{Repo: from, Commit: commit, Tag: tag, Go: artifact.Go{Module: ".", Packages: []string{"."}, Trimpath: true}}
		res, err := fetcher(t).Fetch(context.Background(), &artifact.Request{Name: "app", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
		if err != nil {
			t.Fatalf("%s at %s: %v", from, tag, err)
		}
		return res
	}
	settings := func(res *artifact.Result) map[string]string {
		m := map[string]string{}
		for _, s := range binInfo(t, res, "app").Settings {
			m[s.Key] = s.Value
		}
		return m
	}

	byHTTP := build(srv.URL, "v1.2.0")
	info := binInfo(t, byHTTP, "app")
	if info.Main.Version != "v1.2.0" {
		t.Errorf("main module version %q, want v1.2.0 (the recipe's tag)", info.Main.Version)
	}
	s := settings(byHTTP)
	if s["vcs.revision"] != commit || s["vcs.modified"] != "false" || s["vcs"] != "git" {
		t.Errorf("VCS stamps %v, want git at %s, unmodified", s, commit)
	}
	byPath := build(repo, "v1.2.0")
	if a, b := fileSum(t, byHTTP, "app"), fileSum(t, byPath, "app"); a != b {
		t.Errorf("the same pin fetched whole (dumb HTTP) and shallow (a path) gives two binaries: %s, %s", a, b)
	}

	// A tag that is no version of the module claims none: (devel), and
	// no VCS stamp, as before.
	other := build(repo, "release-1.2")
	if v := binInfo(t, other, "app").Main.Version; v != "(devel)" {
		t.Errorf("tag release-1.2: main module version %q, want (devel)", v)
	}
	if s := settings(other); s["vcs.revision"] != "" {
		t.Errorf("tag release-1.2: VCS stamps %v, want none", s)
	}
}

// fileSum is the sha256 of the file name in res.
func fileSum(t *testing.T, res *artifact.Result, name string) string {
	t.Helper()
	e, ok := res.Tree.Get(name)
	if !ok {
		t.Fatalf("no %s in the tree", name)
	}
	return fixture.SHA256(mustRead(t, e.Source))
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A tagged checkout with no go.mod is go build's to refuse, in its words.
func TestGitBuildTagWithoutModule(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo, commit := committedRepo(t, map[string]string{"main.go": "package main\n\nfunc main() {}\n"})
	fixture.Git(t, repo, "tag", "v1.0.0")
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	k := &artifact.Git{Repo: repo, Commit: commit, Tag: "v1.0.0", Go: artifact.Go{Module: ".", Packages: []string{"."}}}
	_, err = fetcher(t).Fetch(context.Background(), &artifact.Request{Name: "app", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "cannot find main module") {
		t.Errorf("a module without go.mod: %v, want go build's refusal", err)
	}
}

// The files a checkout holds, and what the go command stamps of it, are
// the pin's alone: a user's git attributes (~/.config/git/attributes,
// read even where their git configuration is not) would otherwise turn
// an embedded file's line ends to CRLF on one machine, and show a file
// upstream committed with CRLF as modified (vcs.modified=true, version
// v1.0.0+dirty).
func TestGitBuildIgnoresUserAttributes(t *testing.T) {
	repo, commit := taggedApp(t, map[string]string{
		"main.go":  "package main\n\nimport _ \"embed\"\n\n//go:embed data.txt\nvar data string\n\nfunc main() { print(data) }\n",
		"data.txt": "one\ntwo\n",
		"make.bat": "go build\r\n",
	})
	build := func() *artifact.Result {
		t.Helper()
		res, err := fetchTagged(t, repo, commit)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// The go command's cache is under HOME unless GOCACHE says where:
	// the user's stays, so that the builds are warm.
	if os.Getenv("GOCACHE") == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			t.Setenv("GOCACHE", filepath.Join(dir, "go-build"))
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	clean := build()
	if err := os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "git", "attributes"), []byte("* text eol=crlf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withAttrs := build()
	info := binInfo(t, withAttrs, "app")
	if info.Main.Version != "v1.0.0" {
		t.Errorf("with the user's git attributes, main module version %q, want v1.0.0", info.Main.Version)
	}
	if a, b := fileSum(t, clean, "app"), fileSum(t, withAttrs, "app"); a != b {
		t.Errorf("the user's git attributes changed the binary: %s, then %s", a, b)
	}

	// Nor configuration given in the environment (git -c, which a hook
	// inherits as GIT_CONFIG_PARAMETERS, or GIT_CONFIG_COUNT): with
	// core.autocrlf=true the checkout's text files ended in CRLF.
	if err := os.Remove(filepath.Join(home, ".config", "git", "attributes")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.autocrlf")
	t.Setenv("GIT_CONFIG_VALUE_0", "true")
	if a, b := fileSum(t, clean, "app"), fileSum(t, build(), "app"); a != b {
		t.Errorf("core.autocrlf=true in GIT_CONFIG_COUNT changed the binary: %s, then %s", a, b)
	}
}

// A build run from a git hook with GIT_DIR and GIT_INDEX_FILE set for the
// user's repository (a pre-commit hook in a linked worktree: git sets
// both, absolute) checks out and stamps the pin, and leaves the user's
// repository alone: git would have worked on it instead of
// the checkout (a remote added, HEAD detached, the index replaced, its
// tags deleted), and the go command stamped nothing.
func TestGitBuildIgnoresHookEnvironment(t *testing.T) {
	repo, commit := taggedApp(t, nil)

	mine, _ := committedRepo(t, map[string]string{"recipe.yaml": "artifacts: {}\n"})
	fixture.Git(t, mine, "tag", "mine")
	state := func() string {
		return fixture.Git(t, mine, "rev-parse", "--abbrev-ref", "HEAD") + " tags=" + fixture.Git(t, mine, "tag") +
			" remotes=" + fixture.Git(t, mine, "remote") + " status=" + fixture.Git(t, mine, "status", "--porcelain")
	}
	before := state()

	// A hook of a server that serves namespaces (gitnamespaces(7)) has
	// GIT_NAMESPACE too: pallet's git then saw only the refs under it,
	// in the pin's repository as well, and said it had no tag v1.0.0.
	hook := map[string]string{"GIT_DIR": filepath.Join(mine, ".git"), "GIT_INDEX_FILE": filepath.Join(mine, ".git", "index"), "GIT_WORK_TREE": mine, "GIT_NAMESPACE": "mine"}
	for k, v := range hook {
		t.Setenv(k, v)
	}
	res, err := fetchTagged(t, repo, commit)
	for k := range hook {
		os.Unsetenv(k)
	}
	if err != nil {
		t.Fatal(err)
	}
	info := binInfo(t, res, "app")
	revision := ""
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	if info.Main.Version != "v1.0.0" || revision != commit {
		t.Errorf("in a hook's environment: version %q at %q, want v1.0.0 at %s", info.Main.Version, revision, commit)
	}
	if after := state(); after != before {
		t.Errorf("the build changed the user's repository: %q, was %q", after, before)
	}
}

// A module in a subdirectory is stamped by its prefixed tag (api/v1.0.0
// names v1.0.0 of module .../api), as in upstream's clone: the go command
// finds the repository's module path in the go.mod at its root, and where
// there is none it stamps the commit and says (devel).
func TestGitBuildStampsSubdirectoryTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rootGoMod, want string
	}{
		{"module example.com/repo\n\ngo 1.22\n", "v1.0.0"},
		{"", "(devel)"},
	} {
		files := map[string]string{
			"api/go.mod":  "module example.com/repo/api\n\ngo 1.22\n",
			"api/main.go": "package main\n\nfunc main() {}\n",
		}
		if c.rootGoMod != "" {
			files["go.mod"] = c.rootGoMod
		}
		repo, commit := committedRepo(t, files)
		fixture.Git(t, repo, "tag", "api/v1.0.0")
		fixture.Git(t, repo, "tag", "v9.0.0") // the root module's, or no module's
		k := &artifact.Git{Repo: repo, Commit: commit, Tag: "api/v1.0.0", Go: artifact.Go{Module: "api", Packages: []string{"."}, Trimpath: true}}
		res, err := fetcher(t).Fetch(context.Background(), &artifact.Request{Name: "api", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		info := binInfo(t, res, "api")
		revision := ""
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
		if info.Main.Version != c.want || revision != commit {
			t.Errorf("root go.mod %q: version %q at %q, want %s at %s", c.rootGoMod, info.Main.Version, revision, c.want, commit)
		}
	}
}

// committedRepo makes a git repository of files, with one commit, and
// returns it and the commit.
func committedRepo(t *testing.T, files map[string]string) (repo, commit string) {
	t.Helper()
	repo = t.TempDir()
	for name, content := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fixture.Git(t, repo, "init", "-q")
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "release")
	return repo, fixture.Git(t, repo, "rev-parse", "HEAD")
}

// An attributes file named by git configuration in the environment
// (GIT_CONFIG_COUNT, or GIT_CONFIG_PARAMETERS, which a hook inherits
// from git -c) stays out of what the go command stamps, as one named in
// ~/.gitconfig does: the go command's git reads the environment's after
// the checkout's own .git/config, where pallet turned the user's
// attributes off, and '* text eol=crlf' there showed a file committed
// with CRLF as modified (v1.0.0+dirty).
func TestGitBuildIgnoresAttributesFileInEnvironment(t *testing.T) {
	repo, commit := taggedApp(t, map[string]string{
		"make.bat": "go build\r\n",
	})
	attrs := filepath.Join(t.TempDir(), "attributes")
	if err := os.WriteFile(attrs, []byte("* text eol=crlf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range []map[string]string{
		{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.attributesFile", "GIT_CONFIG_VALUE_0": attrs},
		{"GIT_CONFIG_PARAMETERS": "'core.attributesfile'='" + attrs + "'"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		res, err := fetchTagged(t, repo, commit)
		for k := range env {
			os.Unsetenv(k)
		}
		if err != nil {
			t.Fatal(err)
		}
		if v := binInfo(t, res, "app").Main.Version; v != "v1.0.0" {
			t.Errorf("%v: main module version %q, want v1.0.0", env, v)
		}
	}
}

// A template directory named in the environment (GIT_TEMPLATE_DIR) gives
// the checkout no hooks: git init copied its post-checkout hook into
// the checkout, and git checkout ran it, so that what the hook wrote
// there was built and stamped (a file it left made v1.0.0+dirty), on the
// machines that set it alone.
func TestGitBuildIgnoresTemplateDirectory(t *testing.T) {
	repo, commit := taggedApp(t, nil)
	templates := t.TempDir()
	if err := os.Mkdir(filepath.Join(templates, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(templates, "hooks", "post-checkout"), []byte("#!/bin/sh\necho stray > stray.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_TEMPLATE_DIR", templates)
	res, err := fetchTagged(t, repo, commit)
	if err != nil {
		t.Fatal(err)
	}
	if v := binInfo(t, res, "app").Main.Version; v != "v1.0.0" {
		t.Errorf("with GIT_TEMPLATE_DIR's post-checkout hook: main module version %q, want v1.0.0", v)
	}
}

// A GIT_DEFAULT_HASH in the environment (sha256, for the repositories a
// user makes) leaves the repository pallet fetches a pin into in the
// remote's object format: every git build failed, "mismatched
// algorithms: client sha256; server sha1".
func TestGitBuildIgnoresDefaultHash(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo, commit := committedRepo(t, map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {}\n",
	})
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_DEFAULT_HASH", "sha256")
	k := &artifact.Git{Repo: repo, Commit: commit, Go: artifact.Go{Module: ".", Packages: []string{"."}, Trimpath: true}}
	if _, err := fetcher(t).Fetch(context.Background(), &artifact.Request{Name: "app", Platform: p, NoLicense: true, Kind: k}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

// fetchTagged builds the repository's module at commit, tagged v1.0.0,
// for linux/amd64, as the stamping tests each do.
func fetchTagged(t *testing.T, repo, commit string) (*artifact.Result, error) {
	t.Helper()
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	k := &artifact.Git{Repo: repo, Commit: commit, Tag: "v1.0.0", Go: artifact.Go{Module: ".", Packages: []string{"."}, Trimpath: true}}
	return fetcher(t).Fetch(context.Background(), &artifact.Request{Name: "app", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
}

// taggedApp makes a repository of a main package, module example.com/app
// (files adds to or replaces its go.mod and main.go), committed and
// tagged v1.0.0, as the stamping tests start; it skips without git.
func taggedApp(t *testing.T, files map[string]string) (repo, commit string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	all := map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {}\n",
	}
	maps.Copy(all, files)
	repo, commit = committedRepo(t, all)
	fixture.Git(t, repo, "tag", "v1.0.0")
	return repo, commit
}
