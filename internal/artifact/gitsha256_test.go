package artifact_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
)

// A repository of the SHA-256 object format, whose commits are the 64
// hex digits a recipe may pin, is fetched, tag and all, shared between
// platforms, mirrored and read back offline: pallet's own repository,
// which git init made SHA-1 whatever the remote, could not take its
// objects ("mismatched algorithms: client sha1; server sha256").
func TestGitSHA256Repository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	fixture.Git(t, repo, "init", "-q", "--object-format=sha256", "-b", "main")
	if err := os.MkdirAll(filepath.Join(repo, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "etc", "a.conf"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "sha256")
	fixture.Git(t, repo, "tag", "-a", "-m", "v1", "v1.0.0")
	commit := fixture.Git(t, repo, "rev-parse", "HEAD")
	if len(commit) != 64 {
		t.Fatalf("git made a %d-digit commit: this git has no SHA-256", len(commit))
	}
	k := &artifact.GitFiles{Repo: "file://" + repo, Commit: commit, Tag: "v1.0.0", Path: "etc"}
	ctx := context.Background()
	check := func(name string, f *artifact.Fetcher) {
		t.Helper()
		res, err := f.Fetch(ctx, filesRequest(t, k), t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := res.Tree.Get("a.conf"); !ok {
			t.Errorf("%s: %v", name, paths(res.Tree))
		}
	}
	check("fetch", fetcher(t))

	shared := fetcher(t)
	if err := shared.ShareCheckouts(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	check("shared", shared)

	id, err := fetcher(t).ResolveTag(ctx, k.Repo, k.Tag)
	if err != nil {
		t.Fatal(err)
	}
	if typ, err := fetcher(t).TagObjectType(ctx, k.Repo, k.Tag, id); err != nil || typ != "commit" {
		t.Errorf("tag object: %q, %v", typ, err)
	}

	mirror := t.TempDir()
	if err := fetcher(t).MirrorTo(ctx, mirror, []*artifact.Request{filesRequest(t, k)}); err != nil {
		t.Fatal(err)
	}
	offline := fetcher(t)
	offline.Offline, offline.Mirror = true, mirror
	check("offline", offline)
}
