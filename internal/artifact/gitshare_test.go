package artifact_test

import (
	"context"
	"debug/buildinfo"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
)

// With shared checkouts a commit is fetched once per build: the requests
// of other platforms check it out from what the first fetched, so they
// succeed with the upstream gone.
func TestSharedCheckouts(t *testing.T) {
	repo, commit := filesRepo(t)
	// A main package beside the scripts, built for two platforms.
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/app\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "app")
	fixture.Git(t, repo, "tag", "v1.1.0")
	commit = fixture.Git(t, repo, "rev-parse", "HEAD")

	f := fetcher(t)
	// Named relative, as a relative TMPDIR names the build's work
	// directory: git must be given the objects absolute.
	t.Chdir(t.TempDir())
	if err := os.Mkdir("shared", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.ShareCheckouts("shared"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	build := func(pl string) (*artifact.Result, error) {
		p, err := platform.Parse(pl)
		if err != nil {
			t.Fatal(err)
		}
		k := &artifact.Git{Repo: repo, Commit: commit, Tag: "v1.1.0", Go: artifact.Go{Module: ".", Packages: []string{"."}}}
		return f.Fetch(ctx, &artifact.Request{Name: "app", Platform: p, NoLicense: true, Kind: k}, t.TempDir())
	}
	files := func(pl string) (*artifact.Result, error) {
		p, err := platform.Parse(pl)
		if err != nil {
			t.Fatal(err)
		}
		k := &artifact.GitFiles{Repo: repo, Commit: commit, Tag: "v1.1.0", Path: "hack/windows"}
		return f.Fetch(ctx, &artifact.Request{Name: "scripts", Platform: p, Kind: k}, t.TempDir())
	}

	// Two at once: one fetches, the other waits for it.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, pl := range []string{"linux/amd64", "windows/amd64"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = files(pl)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := build("linux/amd64"); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	res, err := build("linux/arm64")
	if err != nil {
		t.Fatalf("a second platform fetched the commit again: %v", err)
	}
	e, ok := res.Tree.Get("app")
	if !ok {
		t.Fatalf("no app built")
	}
	info, err := buildinfo.ReadFile(e.Source)
	if err != nil {
		t.Fatal(err)
	}
	var arch string
	for _, s := range info.Settings {
		if s.Key == "GOARCH" {
			arch = s.Value
		}
	}
	if arch != "arm64" || info.Main.Path != "example.com/app" {
		t.Errorf("built %s for %s, want example.com/app for arm64", info.Main.Path, arch)
	}

	// Another commit is another fetch: refused, the upstream being gone,
	// and blamed on the repository.
	k := &artifact.GitFiles{Repo: repo, Commit: strings.Repeat("a", 40), Path: "hack"}
	p, _ := platform.Parse("linux/amd64")
	_, err = f.Fetch(ctx, &artifact.Request{Name: "scripts", Platform: p, Kind: k}, t.TempDir())
	var fe *artifact.FieldError
	if !errors.As(err, &fe) || fe.Field != "repo" {
		t.Errorf("another commit with the upstream gone: %v", err)
	}
}
