package artifact_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// filesRepo is a repository with scripts, a licence at its root and
// links of every kind, committed once; it returns the repository and
// the commit.
func filesRepo(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(repo, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	write("LICENSE", "Apache License\n", 0o644)
	write("hack/windows/Install-OVS.ps1", "Write-Host ovs\n", 0o755)
	write("hack/windows/lib/common.ps1", "# common\n", 0o644)
	link("hack/windows/common.ps1", "lib/common.ps1")
	write("third_party/ovs/COPYING", "ovs licence\n", 0o644)
	write("third_party/ovs/ovs.conf", "x\n", 0o644)
	write("etc/out/a.conf", "a\n", 0o644)
	link("etc/out/up", "../../LICENSE") // stays in the repository, not in etc/out
	link("escape", "/etc")
	link("install.ps1", "hack/windows/Install-OVS.ps1")
	fixture.Git(t, repo, "init", "-q", "-b", "main")
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "files")
	fixture.Git(t, repo, "tag", "v1.0.0")
	return repo, fixture.Git(t, repo, "rev-parse", "HEAD")
}

func filesRequest(t *testing.T, k *artifact.GitFiles, licenses ...string) *artifact.Request {
	t.Helper()
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	return &artifact.Request{Name: "scripts", Platform: p, Licenses: licenses, Kind: k}
}

func paths(t *tree.Tree) []string {
	var out []string
	for e := range t.All() {
		out = append(out, e.Path)
	}
	return out
}

// A file, a directory and a link to a file are taken from the commit as
// they are, with the repository's licence unless the files carry their
// own; what is not at the commit, or leads out of what is taken, is
// blamed on the path.
func TestGitFiles(t *testing.T) {
	repo, commit := filesRepo(t)
	f := fetcher(t)
	fetch := func(p string, licenses ...string) (*artifact.Result, error) {
		t.Helper()
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Tag: "v1.0.0", Path: p}
		return f.Fetch(context.Background(), filesRequest(t, k, licenses...), t.TempDir())
	}

	res, err := fetch("hack/windows/Install-OVS.ps1")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := res.Tree.Get("Install-OVS.ps1")
	if got := paths(res.Tree); !ok || len(got) != 1 || e.Mode&0o111 == 0 {
		t.Errorf("a file: %v, mode %v", got, e)
	}
	if got := paths(res.Licenses); !slices.Equal(got, []string{"LICENSE"}) {
		t.Errorf("licences of a file: %v, want the repository's", got)
	}
	if o := res.Record.Origin; o.Repo != repo || o.Commit != commit || o.Tag != "v1.0.0" || o.GitPath != "hack/windows/Install-OVS.ps1" || res.Record.Kind != "git-files" {
		t.Errorf("record: %+v", res.Record)
	}

	res, err = fetch("hack/windows")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(res.Tree), []string{"Install-OVS.ps1", "common.ps1", "lib", "lib/common.ps1"}; !slices.Equal(got, want) {
		t.Errorf("a directory: %v, want %v", got, want)
	}
	if e, _ := res.Tree.Get("common.ps1"); e.Kind != tree.Symlink || e.Link != "lib/common.ps1" {
		t.Errorf("a link inside the directory: %+v", e)
	}

	res, err = fetch("third_party/ovs")
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Licenses); !slices.Equal(got, []string{"COPYING"}) {
		t.Errorf("licences of a directory with its own: %v", got)
	}
	res, err = fetch("hack/windows", "LICENSE", "third_party/ovs/COPYING")
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Licenses); !slices.Equal(got, []string{"LICENSE", "third_party", "third_party/ovs", "third_party/ovs/COPYING"}) {
		t.Errorf("named licences, from the repository's root: %v", got)
	}

	res, err = fetch("install.ps1")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := res.Tree.Get("install.ps1"); !ok || e.Kind != tree.File {
		t.Errorf("a link to a file in the repository: %v", paths(res.Tree))
	}

	for _, tc := range []struct{ path, want string }{
		{"hack/linux/install.sh", "no file or directory hack/linux/install.sh at that commit (nearest: hack/windows)"},
		{"hack/windows/Install-OVS.ps", "(nearest: hack/windows/Install-OVS.ps1, hack/windows/common.ps1, hack/windows/lib)"},
		{"LICENCE", "no file or directory LICENCE at that commit (nearest: LICENSE, "},
		{"install.ps1/x", "no file or directory install.ps1/x"},
		{"escape/passwd", "escapes"},
		{"etc/out", "etc/out/up"},
		{".", `escape: symlink target "/etc" is absolute`},
		{".git/config", "no file or directory .git/config"},
	} {
		_, err := fetch(tc.path)
		var fe *artifact.FieldError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) || fe.Field != "path" {
			t.Errorf("path %s: %v, want a FieldError of path saying %q", tc.path, err, tc.want)
		}
	}
	if _, err := fetch("hack/windows", "NOTICE"); err == nil || !strings.Contains(err.Error(), "licence file NOTICE not found") {
		t.Errorf("a named licence missing: %v", err)
	}
}

// A mirror holds the repository; an offline fetch takes the files from it.
func TestGitFilesMirrorThenOffline(t *testing.T) {
	repo, commit := filesRepo(t)
	k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack/windows/Install-OVS.ps1"}
	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{filesRequest(t, k)}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	f := fetcher(t)
	f.Offline, f.Mirror = true, mirror
	res, err := f.Fetch(context.Background(), filesRequest(t, k), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Tree.Get("Install-OVS.ps1"); !ok {
		t.Errorf("offline: %v", paths(res.Tree))
	}
}

// The key follows every pin and the path; the path a recipe gives stays
// in the repository.
func TestGitFilesKeyAndPath(t *testing.T) {
	base := artifact.GitFiles{Repo: "https://example.com/r", Commit: strings.Repeat("a", 40), Tag: "v1", Path: "hack"}
	key := func(g artifact.GitFiles) string {
		parts, ok, err := g.Key(nil, nil)
		if err != nil || !ok {
			t.Fatalf("key: %v, %v", ok, err)
		}
		return strings.Join(parts, "\x00")
	}
	seen := map[string]bool{key(base): true}
	for _, change := range []func(*artifact.GitFiles){
		func(g *artifact.GitFiles) { g.Repo += "2" },
		func(g *artifact.GitFiles) { g.Commit = strings.Repeat("b", 40) },
		func(g *artifact.GitFiles) { g.Tag = "" },
		func(g *artifact.GitFiles) { g.Path = "hack/windows" },
	} {
		g := base
		change(&g)
		if k := key(g); seen[k] {
			t.Errorf("%+v has the key of another", g)
		} else {
			seen[k] = true
		}
	}

	for in, want := range map[string]string{"hack/windows/": "hack/windows", "./a//b": "a/b", ".": ".", "a/./b": "a/b"} {
		if got, err := artifact.CleanRepoPath(in); err != nil || got != want {
			t.Errorf("CleanRepoPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/..", `a\b`, `\x`} {
		if got, err := artifact.CleanRepoPath(in); err == nil {
			t.Errorf("CleanRepoPath(%q) = %q, want an error", in, got)
		}
	}
}

// A submodule's directory is empty in a checkout: a path that is one, or
// holds one, is refused rather than placing nothing.
func TestGitFilesRefusesSubmodules(t *testing.T) {
	repo, commit := filesRepo(t)
	fixture.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+commit+",hack/windows/vendored")
	fixture.Git(t, repo, "commit", "-q", "-m", "a submodule")
	commit = fixture.Git(t, repo, "rev-parse", "HEAD")
	f := fetcher(t)
	for p, ok := range map[string]bool{"hack/windows/vendored": false, "hack/windows": false, ".": false, "hack": false, "third_party": true, "hack/windows/Install-OVS.ps1": true} {
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: p}
		_, err := f.Fetch(context.Background(), filesRequest(t, k), t.TempDir())
		var fe *artifact.FieldError
		switch {
		case ok && err != nil:
			t.Errorf("path %s: %v", p, err)
		case !ok && (err == nil || !strings.Contains(err.Error(), "hack/windows/vendored is a git submodule") || !errors.As(err, &fe) || fe.Field != "path"):
			t.Errorf("path %s: %v, want the submodule refused", p, err)
		}
	}
}

// A checkout is bounded as an archive's extraction is, before a file is
// written, whether the commit is fetched for one checkout or shared.
func TestGitCheckoutLimits(t *testing.T) {
	repo, commit := filesRepo(t)
	for _, shared := range []bool{false, true} {
		for _, tc := range []struct {
			lim  artifact.UnpackLimits
			want string
		}{
			{artifact.UnpackLimits{MaxEntries: 5}, "more than 5 files (limits.entries)"},
			{artifact.UnpackLimits{MaxBytes: 40}, "hold more than 40 bytes (limits.extract"},
		} {
			f := fetcher(t)
			f.Limits.Unpack = tc.lim
			if shared {
				if err := f.ShareCheckouts(t.TempDir()); err != nil {
					t.Fatal(err)
				}
			}
			work := t.TempDir()
			k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}
			_, err := f.Fetch(context.Background(), filesRequest(t, k), work)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("shared %v, %+v: %v, want %q", shared, tc.lim, err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(work, "src", "LICENSE")); !os.IsNotExist(err) {
				t.Errorf("shared %v, %+v: files were checked out: %v", shared, tc.lim, err)
			}
		}
		f := fetcher(t)
		f.Limits.Unpack = artifact.UnpackLimits{MaxEntries: 11, MaxBytes: 1000}
		if _, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}), t.TempDir()); err != nil {
			t.Errorf("within the limits: %v", err)
		}
	}
}

// A fetch is held to the download limit as a download is: what git
// writes of the repository counts.
func TestGitFetchLimit(t *testing.T) {
	repo, commit := bigRepo(t)
	for _, shared := range []bool{false, true} {
		f := fetcher(t)
		f.Limits.MaxBytes = 64 << 10
		if shared {
			if err := f.ShareCheckouts(t.TempDir()); err != nil {
				t.Fatal(err)
			}
		}
		_, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}), t.TempDir())
		var fe *artifact.FieldError
		if err == nil || !strings.Contains(err.Error(), "more than 65536 bytes (limits.download") || !errors.As(err, &fe) || fe.Field != "repo" {
			t.Errorf("shared %v: %v, want the fetch refused at the repo's line", shared, err)
		}
		if shared {
			continue // a commit fetched once per build fails once per build
		}
		f.Limits.MaxBytes = 1 << 20
		if _, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}), t.TempDir()); err != nil {
			t.Errorf("within the limit: %v", err)
		}
	}
}

// pallet fetch's clone of a repository is held to the same limit.
func TestGitMirrorLimit(t *testing.T) {
	repo, commit := bigRepo(t)
	f := fetcher(t)
	f.Limits.MaxBytes = 64 << 10
	mirror := t.TempDir()
	err := f.MirrorTo(context.Background(), mirror, []*artifact.Request{filesRequest(t, &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"})})
	if err == nil || !strings.Contains(err.Error(), "more than 65536 bytes (limits.download") {
		t.Errorf("mirror of a repository over the limit: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(mirror, "git")); len(entries) != 0 {
		t.Errorf("the mirror keeps %v", entries)
	}
}

// bigRepo is filesRepo with 256 KiB of random bytes committed on top,
// which no compression makes smaller.
func bigRepo(t *testing.T) (string, string) {
	t.Helper()
	repo, _ := filesRepo(t)
	big := make([]byte, 256<<10)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "blob.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "big")
	return repo, fixture.Git(t, repo, "rev-parse", "HEAD")
}

// corruptLoose replaces the loose object id of the bare repository repo
// with one of the same type holding other bytes, under the same name,
// as a disk's or a hand's damage would. The file is replaced, not
// rewritten: a mirror cloned from a local path shares its files with
// the repository it came from.
func corruptLoose(t *testing.T, repo, id, content string) {
	t.Helper()
	p := filepath.Join(repo, "objects", id[:2], id[2:])
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	fmt.Fprintf(w, "blob %d\x00%s", len(content), content)
	w.Close()
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
}

// pallet fetch hashes the objects of the pinned commit's checkout in a
// mirror it already holds: a blob replaced under its name is cloned
// again from upstream, and, upstream gone, refused, where the commit's
// presence was all that was asked and an offline build found the
// damage.
func TestGitMirrorCorruptObject(t *testing.T) {
	repo, commit := filesRepo(t)
	k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack/windows/Install-OVS.ps1"}
	mirror := t.TempDir()
	mirrorTo := func() error {
		return fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{filesRequest(t, k)})
	}
	if err := mirrorTo(); err != nil {
		t.Fatal(err)
	}
	m := artifact.MirrorRepo(mirror, repo)
	blob := fixture.Git(t, m, "rev-parse", commit+":hack/windows/Install-OVS.ps1")

	corruptLoose(t, m, blob, "Write-Host evil\n")
	if err := mirrorTo(); err != nil {
		t.Fatalf("upstream at hand: %v", err)
	}
	if got := fixture.Git(t, m, "cat-file", "blob", blob); got != "Write-Host ovs" {
		t.Errorf("the mirror was not mended: the blob reads %q", got)
	}

	corruptLoose(t, m, blob, "Write-Host evil\n")
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	err := mirrorTo()
	if err == nil || !strings.Contains(err.Error(), "blob "+blob+" holds what hashes to") {
		t.Fatalf("upstream gone: %v", err)
	}
	if _, err := os.Stat(m); err != nil {
		t.Errorf("the mirror was not left as it was: %v", err)
	}
	t.Log(err)
}

// A pack of the mirror altered where it holds a blob of the checkout is
// refused as well: git cannot inflate it, or it hashes to another name.
func TestGitMirrorCorruptPack(t *testing.T) {
	repo, commit := filesRepo(t)
	k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}
	mirror := t.TempDir()
	mirrorTo := func() error {
		return fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{filesRequest(t, k)})
	}
	if err := mirrorTo(); err != nil {
		t.Fatal(err)
	}
	m := artifact.MirrorRepo(mirror, repo)
	blob := fixture.Git(t, m, "rev-parse", commit+":hack/windows/Install-OVS.ps1")
	fixture.Git(t, m, "repack", "-a", "-d", "-q")
	fixture.Git(t, m, "prune-packed")
	packs, err := filepath.Glob(filepath.Join(m, "objects", "pack", "*.pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs %v, %v", packs, err)
	}
	// verify-pack -v lists each object with its offset in the pack.
	var offset int64 = -1
	for _, line := range strings.Split(fixture.Git(t, m, "verify-pack", "-v", strings.TrimSuffix(packs[0], ".pack")+".idx"), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == blob {
			offset, _ = strconv.ParseInt(f[4], 10, 64)
		}
	}
	if offset < 0 {
		t.Fatalf("blob %s is not in %s", blob, packs[0])
	}
	data, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	data[offset+4] ^= 0xff // past the object's header, in its deflated bytes
	os.Remove(packs[0])
	if err := os.WriteFile(packs[0], data, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	err = mirrorTo()
	if err == nil || !strings.Contains(err.Error(), blob) {
		t.Fatalf("a damaged pack, upstream gone: %v", err)
	}
	t.Log(err)
}

// A directory at a repository's place in the mirror that is not a git
// repository (emptied, or not pallet's) is refused naming it: git run
// in it found the repository around the mirror, fetched into it and
// pruned its remote branches.
func TestGitMirrorNotARepository(t *testing.T) {
	repo, commit := filesRepo(t)
	k := &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack/windows/Install-OVS.ps1"}
	outer := t.TempDir()
	fixture.Git(t, outer, "init", "-q")
	fixture.Git(t, outer, "remote", "add", "origin", repo)
	mirror := filepath.Join(outer, "mirror")
	m := artifact.MirrorRepo(mirror, repo)
	if err := os.MkdirAll(m, 0o755); err != nil {
		t.Fatal(err)
	}
	err := fetcher(t).MirrorTo(context.Background(), mirror, []*artifact.Request{filesRequest(t, k)})
	if err == nil || !strings.Contains(err.Error(), m) || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("got %v, want %s refused as not a git repository", err, m)
	}
	if refs := fixture.Git(t, outer, "for-each-ref"); refs != "" {
		t.Errorf("the repository around the mirror was fetched into: %s", refs)
	}
	if _, err := os.Stat(filepath.Join(outer, ".git", "info", "refs")); err == nil {
		t.Error("the repository around the mirror was written its server info")
	}
}
