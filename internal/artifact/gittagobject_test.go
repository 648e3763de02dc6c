package artifact_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// What a tag names is told over every transport pallet lock asks: a
// local path, a server that filters objects and one that does not, git://
// and the dumb http protocol, which cuts no history; through annotated
// tags too, whose own object is not what they name.
func TestTagObjectType(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo, _ := committedRepo(t, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	fixture.Git(t, repo, "tag", "light")
	fixture.Git(t, repo, "tag", "-a", "-m", "annotated", "annotated")
	fixture.Git(t, repo, "tag", "tree", "HEAD^{tree}")
	fixture.Git(t, repo, "tag", "-a", "-m", "a tree", "annotated-tree", "HEAD^{tree}")
	fixture.Git(t, repo, "tag", "blob", "HEAD:a.txt")
	want := map[string]string{"light": "commit", "annotated": "commit", "tree": "tree", "annotated-tree": "tree", "blob": "blob"}

	base := t.TempDir()
	bare := filepath.Join(base, "r.git")
	fixture.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	fixture.Git(t, bare, "update-server-info")
	filtering := filepath.Join(base, "filtering.git")
	fixture.Git(t, repo, "clone", "-q", "--bare", repo, filtering)
	fixture.Git(t, filtering, "config", "uploadpack.allowFilter", "true")
	dumb := httptest.NewServer(http.FileServer(http.Dir(bare)))
	t.Cleanup(dumb.Close)

	for name, url := range map[string]string{
		"path":      bare,
		"file":      "file://" + bare,
		"filtering": "file://" + filtering,
		"git":       gitDaemon(t, base) + "/r.git",
		"dumb http": dumb.URL,
	} {
		t.Run(name, func(t *testing.T) {
			f := fetcher(t)
			// A fetch that waits on the server for nothing (a filter
			// asked of dumb http) fails in seconds, not in the minute
			// of the default.
			f.Limits.Stall = 10 * time.Second
			for tag, kind := range want {
				id, err := f.ResolveTag(context.Background(), url, tag)
				if err != nil {
					t.Fatalf("tag %s: %v", tag, err)
				}
				got, err := f.TagObjectType(context.Background(), url, tag, id)
				if err != nil || got != kind {
					t.Errorf("tag %s names %q, %v; want %q", tag, got, err, kind)
				}
			}
		})
	}
}
