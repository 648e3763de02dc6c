package artifact_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// DownloadUnpinned learns a digest: hashed as it streams when no file is
// wanted, kept when one is, and still bounded by the limits and retries
// of a pinned download.
func TestDownloadUnpinned(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/flaky" && n == 1 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.Write(payload)
	})
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path, file string
		lim              transfer.Limits
		err              string
	}{
		{name: "hash only", path: "/f"},
		{name: "into a file", path: "/f", file: filepath.Join(dir, "kept")},
		{name: "retried", path: "/flaky"},
		{name: "over the limit", path: "/f", lim: transfer.Limits{MaxBytes: 1000}, err: "limit of 1000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fetcher(t).DownloadUnpinned(ctx, srv.URL+tc.path, tc.file, tc.lim)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != sum(payload) {
				t.Errorf("digest %s, want %s", got, sum(payload))
			}
			if tc.file != "" {
				data, err := os.ReadFile(tc.file)
				if err != nil || sum(data) != got {
					t.Errorf("file: %v, %d bytes", err, len(data))
				}
			}
		})
	}
	// Nothing but the file asked for: no temporary left behind.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the download directory, want 1", len(ents))
	}
}

// ResolveTag answers with the commit, for a lightweight tag and for an
// annotated one (whose own object is not a commit).
func TestResolveTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		return fixture.Git(t, repo, args...)
	}
	run("init", "-q", "-b", "main")
	run("commit", "-q", "--allow-empty", "-m", "one")
	run("tag", "light")
	run("tag", "-a", "-m", "annotated", "heavy")
	head := run("rev-parse", "HEAD")
	f := fetcher(t)
	for _, tag := range []string{"light", "heavy"} {
		got, err := f.ResolveTag(context.Background(), repo, tag)
		if err != nil {
			t.Fatal(err)
		}
		if got != head {
			t.Errorf("tag %s: %s, want the commit %s", tag, got, head)
		}
	}
	if _, err := f.ResolveTag(context.Background(), repo, "none"); err == nil || !strings.Contains(err.Error(), "has no tag none") {
		t.Errorf("missing tag: %v", err)
	}
	if _, err := f.ResolveTag(context.Background(), "--upload-pack=true", "x"); err == nil {
		t.Error("a repository starting with - was passed to git")
	}
}
