package artifact_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
)

// smartHTTP serves the bare repositories under root over git's smart
// HTTP protocol, as git http-backend does behind a forge's web server,
// and returns its URL.
func smartHTTP(t *testing.T, root string) string {
	t.Helper()
	return smartHTTPAuth(t, root, "", "")
}

// smartHTTPAuth is smartHTTP answering 401 to a request without the
// basic credentials user and password, when they are given.
func smartHTTPAuth(t *testing.T, root, user, password string) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git is not installed")
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	h := &cgi.Handler{
		Path:   backend,
		Stderr: io.Discard, // the backend's own complaints, about repositories a test asks for in vain
		Env:    []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); user != "" && (u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "credentials, please", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// prRepo is a bare repository whose default branch is trunk, with a
// commit reachable only from a pull request's ref (refs/pull/7/head), as
// GitHub keeps one; it returns the repository and that commit.
func prRepo(t *testing.T, root string) (bare, commit string) {
	t.Helper()
	repo, _ := committedRepo(t, map[string]string{"etc/a.conf": "a\n"})
	fixture.Git(t, repo, "branch", "-M", "trunk")
	fixture.Git(t, repo, "checkout", "-q", "-b", "pr")
	if err := os.WriteFile(filepath.Join(repo, "etc", "b.conf"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "pr")
	commit = fixture.Git(t, repo, "rev-parse", "HEAD")
	bare = filepath.Join(root, "r.git")
	fixture.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	fixture.Git(t, bare, "update-ref", "refs/pull/7/head", commit)
	fixture.Git(t, bare, "branch", "-D", "pr")
	fixture.Git(t, bare, "update-server-info")
	return bare, commit
}

// A commit reachable only from a pull request's ref is fetched from a
// smart server, a file:// URL and, once mirrored, from the mirror served
// as a --mirror-url over plain HTTP.
func TestGitPullRequestCommit(t *testing.T) {
	root := t.TempDir()
	bare, commit := prRepo(t, root)
	smart := smartHTTP(t, root) + "/r.git"
	ctx := context.Background()
	take := func(name string, f *artifact.Fetcher, repo string) {
		t.Helper()
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "etc/b.conf"}
		res, err := f.Fetch(ctx, filesRequest(t, k), t.TempDir())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if _, ok := res.Tree.Get("b.conf"); !ok {
			t.Errorf("%s: %v", name, paths(res.Tree))
		}
	}
	take("smart http", fetcher(t), smart)
	take("file", fetcher(t), "file://"+bare)

	mirror := t.TempDir()
	k := &artifact.GitFiles{Repo: smart, Commit: commit, Path: "etc/b.conf"}
	if err := fetcher(t).MirrorTo(ctx, mirror, []*artifact.Request{filesRequest(t, k)}); err != nil {
		t.Fatal(err)
	}
	served := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	t.Cleanup(served.Close)
	viaURL := fetcher(t)
	viaURL.MirrorURL = served.URL
	take("mirror url", viaURL, smart)
}

// Files a repository keeps in Git LFS are refused at the path, naming
// them: the commit holds their pointers, which were placed where the
// recipe expected the files. A file committed before its pattern went
// to LFS is itself, and taken; so are the files beside the pointers.
func TestGitFilesLFSPointer(t *testing.T) {
	pointer := "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
	repo, commit := committedRepo(t, map[string]string{
		".gitattributes": "*.exe filter=lfs diff=lfs merge=lfs -text\n",
		"w/install.ps1":  "Write-Host install\n",
		"w/tool.exe":     pointer,
		"w/old.exe":      "MZ committed before LFS\n",
		"w/doc.md":       pointer, // a pointer quoted in prose, not kept in LFS
		" lead.exe":      pointer, // listed first, its space and all
	})
	take := func(p string) (*artifact.Result, error) {
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: p}
		return fetcher(t).Fetch(context.Background(), filesRequest(t, k), t.TempDir())
	}
	_, err := take("w")
	var fe *artifact.FieldError
	if !errors.As(err, &fe) || fe.Field != "path" || !strings.Contains(err.Error(), "w/tool.exe") || !strings.Contains(err.Error(), "LFS") || strings.Contains(err.Error(), "old.exe") {
		t.Errorf("a directory holding an LFS pointer: %v", err)
	}
	if _, err := take("."); err == nil || !strings.Contains(err.Error(), ":  lead.exe") {
		t.Errorf("the repository, a pointer first: %v", err)
	}
	if _, err := take("w/tool.exe"); err == nil {
		t.Error("an LFS pointer taken by name was placed")
	}
	for _, p := range []string{"w/old.exe", "w/install.ps1", "w/doc.md"} {
		res, err := take(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if _, ok := res.Tree.Get(filepath.Base(p)); !ok {
			t.Errorf("%s: %v", p, paths(res.Tree))
		}
	}
}

// A token written into a repository's URL is in no error a fetch, a
// tag lookup or a mirror gives, nor in the origin recorded: those are
// shown and shared, the token is not (TestGitRepoCredentialsNotShown in
// cmd/pallet follows it into the record and what pallet prints).
func TestGitRepoCredentialsNotInErrors(t *testing.T) {
	root := t.TempDir()
	_, commit := prRepo(t, root)
	const token = "s3cretT0ken"
	base := smartHTTP(t, root)
	ctx := context.Background()
	for _, u := range []string{
		strings.Replace(base, "http://", "http://ci:"+token+"@", 1),
		strings.Replace(base, "http://", "http://"+token+"@", 1),
	} {
		for _, c := range []struct{ what, repo, commit, tag string }{
			{"no such commit", u + "/r.git", strings.Repeat("a", 40), ""},
			{"no such repository", u + "/nope.git", commit, ""},
			{"no such tag", u + "/r.git", commit, "v9"},
		} {
			k := &artifact.GitFiles{Repo: c.repo, Commit: c.commit, Tag: c.tag, Path: "etc"}
			_, fetchErr := fetcher(t).Fetch(ctx, filesRequest(t, k), t.TempDir())
			_, tagErr := fetcher(t).ResolveTag(ctx, c.repo, "v9")
			mirrorErr := fetcher(t).MirrorTo(ctx, t.TempDir(), []*artifact.Request{filesRequest(t, k)})
			for name, err := range map[string]error{"fetch": fetchErr, "tag": tagErr, "mirror": mirrorErr} {
				switch {
				case err == nil:
					t.Errorf("%s: %s: no error", c.what, name)
				case err != nil && strings.Contains(err.Error(), token):
					t.Errorf("%s: %s: %v", c.what, name, err)
				}
			}
		}
		if o := (&artifact.GitFiles{Repo: u + "/r.git"}).Origin(); strings.Contains(o.Repo, token) || !strings.Contains(o.Repo, "/r.git") {
			t.Errorf("origin %s", o.Repo)
		}
		if o := (&artifact.Git{Repo: u + "/r.git"}).Origin(); strings.Contains(o.Repo, token) {
			t.Errorf("origin %s", o.Repo)
		}
	}
	// ssh's user is no secret: the record keeps the URL as given.
	if o := (&artifact.Git{Repo: "ssh://git@example.com/r.git"}).Origin(); o.Repo != "ssh://git@example.com/r.git" {
		t.Errorf("ssh origin %s", o.Repo)
	}
}

// A mirror of a repository whose URL holds a token keeps the token out
// of what it serves (its config: git clone wrote origin's URL there),
// and its update, for a commit pushed since, still sends it.
func TestGitMirrorKeepsNoCredentials(t *testing.T) {
	root := t.TempDir()
	bare, first := prRepo(t, root)
	const token = "s3cretT0ken"
	repo := strings.Replace(smartHTTPAuth(t, root, "ci", token), "http://", "http://ci:"+token+"@", 1) + "/r.git"
	mirror := t.TempDir()
	ctx := context.Background()
	mirrorCommit := func(commit string) {
		t.Helper()
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "etc"}
		if err := fetcher(t).MirrorTo(ctx, mirror, []*artifact.Request{filesRequest(t, k)}); err != nil {
			t.Fatal(err)
		}
	}
	mirrorCommit(first)
	dst := artifact.MirrorRepo(mirror, repo)
	plain := strings.Replace(repo, "ci:"+token+"@", "", 1)
	if got := fixture.Git(t, dst, "remote", "get-url", "origin"); got != plain {
		t.Errorf("the mirror's origin is %s, want %s: usable, without credentials", got, plain)
	}
	// A mirror an earlier pallet made holds the token: its next update
	// mends it. A commit pushed since: the mirror is updated, not cloned
	// again.
	fixture.Git(t, dst, "remote", "set-url", "origin", repo)
	work := t.TempDir()
	fixture.Git(t, work, "clone", "-q", bare, ".")
	fixture.Git(t, work, "commit", "-q", "--allow-empty", "-m", "later")
	fixture.Git(t, work, "push", "-q", "origin", "HEAD:refs/heads/later")
	mirrorCommit(fixture.Git(t, work, "rev-parse", "HEAD"))
	filepath.WalkDir(mirror, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), token) {
			t.Errorf("%s holds the token:\n%s", p, b)
		}
		return nil
	})
}

// pallet fetch of a git path whose tag has moved since the pin fails at
// the tag, as a Go build's does, and not only the offline build after
// it; a tag that still points at the pin is mirrored.
func TestGitFilesMirrorMovedTag(t *testing.T) {
	repo, commit := filesRepo(t)
	fixture.Git(t, repo, "tag", "v1.0.1")
	fixture.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "after the release")
	fixture.Git(t, repo, "tag", "-f", "-a", "-m", "moved", "v1.0.0")
	mirror := func(tag string) error {
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Tag: tag, Path: "hack/windows"}
		return fetcher(t).MirrorTo(context.Background(), t.TempDir(), []*artifact.Request{filesRequest(t, k)})
	}
	err := mirror("v1.0.0")
	var fe *artifact.FieldError
	if !errors.As(err, &fe) || fe.Field != "tag" || !strings.Contains(err.Error(), "tag v1.0.0 points at") {
		t.Errorf("a moved tag: %v", err)
	}
	if err := mirror("v1.0.1"); err != nil {
		t.Errorf("a tag at the pin: %v", err)
	}
}

// A mirror made with one job's token serves the build given the next
// (the same repository, a fresh token), offline and as a --mirror-url;
// and the cache key is the same for both, as the record is.
func TestGitMirrorFoundWithAnotherToken(t *testing.T) {
	root := t.TempDir()
	_, commit := prRepo(t, root)
	base := smartHTTPAuth(t, root, "ci", "first")
	withToken := func(token string) *artifact.GitFiles {
		return &artifact.GitFiles{Repo: strings.Replace(base, "http://", "http://ci:"+token+"@", 1) + "/r.git", Commit: commit, Path: "etc"}
	}
	ctx := context.Background()
	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(ctx, mirror, []*artifact.Request{filesRequest(t, withToken("first"))}); err != nil {
		t.Fatal(err)
	}
	served := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	t.Cleanup(served.Close)
	offline, viaURL := fetcher(t), fetcher(t)
	offline.Offline, offline.Mirror = true, mirror
	viaURL.MirrorURL = served.URL
	for name, f := range map[string]*artifact.Fetcher{"offline": offline, "mirror url": viaURL} {
		res, err := f.Fetch(ctx, filesRequest(t, withToken("second")), t.TempDir())
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if _, ok := res.Tree.Get("b.conf"); !ok {
			t.Errorf("%s: %v", name, paths(res.Tree))
		}
	}
	a, _, _ := withToken("first").Key(nil, nil)
	b, _, _ := withToken("second").Key(nil, nil)
	if !slices.Equal(a, b) {
		t.Errorf("keys %q and %q", a, b)
	}
}

// A Go build that fails for want of a package in a git submodule, whose
// directory the checkout leaves empty, says the commit has submodules:
// the go command says only that no module provides the package.
func TestGitBuildNamesSubmodules(t *testing.T) {
	sub, _ := committedRepo(t, map[string]string{"lib/lib.go": "package lib\n\nfunc F() {}\n"})
	repo, _ := taggedApp(t, map[string]string{"main.go": "package main\n\nimport \"example.com/app/third_party/sub/lib\"\n\nfunc main() { lib.F() }\n"})
	fixture.Git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "third_party/sub")
	fixture.Git(t, repo, "commit", "-q", "-m", "a submodule")
	commit := fixture.Git(t, repo, "rev-parse", "HEAD")
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	k := &artifact.Git{Repo: repo, Commit: commit, Go: artifact.Go{Module: ".", Packages: []string{"."}, Trimpath: true}}
	_, err = fetcher(t).Fetch(context.Background(), &artifact.Request{Name: "app", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "submodules") || !strings.Contains(err.Error(), "third_party/sub") || !strings.Contains(err.Error(), "no required module provides") {
		t.Errorf("a build needing a submodule's package: %v", err)
	}
}
