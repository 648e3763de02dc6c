package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A directory that is not pallet's cache is refused untouched; a new or
// empty one, or an earlier pallet's cache, is tagged and used, and only
// what pallet names its temporaries is swept from it.
func TestOpenClaimsOnlyACache(t *testing.T) {
	old := time.Now().Add(-48 * time.Hour)
	mk := func(t *testing.T, files ...string) string {
		dir := t.TempDir()
		for _, f := range files {
			p := filepath.Join(dir, f)
			if strings.HasSuffix(f, "/") {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, p, []byte("user data"))
			}
		}
		// Dated after they are all made: making an entry dates its parent.
		err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil || p == dir {
				return err
			}
			return os.Chtimes(p, old, old)
		})
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("a project", func(t *testing.T) {
		dir := mk(t, "pallet.yaml", "tmp/build-logs/2024.log", "digests.json")
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "pallet.yaml, which pallet did not write") {
			t.Fatalf("got %v", err)
		}
		for _, f := range []string{"pallet.yaml", "tmp/build-logs/2024.log", "digests.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		for _, d := range []string{"blobs", "artifacts", tagName} {
			if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
				t.Errorf("%s was made in a directory that is not a cache", d)
			}
		}
	})
	t.Run("only pallet's names, not a cache", func(t *testing.T) {
		dir := mk(t, "tmp/", "tmp/notes.txt")
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "holds no cache pallet made") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("another program's tag", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, tagName), []byte(tagSignature+"\n# created by cargo\n"))
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "written by another program") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("an earlier pallet's cache", func(t *testing.T) {
		dir := mk(t, "artifacts/", "blobs/sha256/", "layers/", "locks/", "digests.json", ".digests.json.new-42", "tmp/build-123/x", "tmp/keep-me")
		if _, err := Open(dir); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(filepath.Join(dir, tagName)); err != nil || !isOurTag(data) {
			t.Errorf("tag: %q %v", data, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "tmp", "build-123")); err == nil {
			t.Error("a killed build's temporary was not swept")
		}
		if _, err := os.Stat(filepath.Join(dir, "tmp", "keep-me")); err != nil {
			t.Errorf("a file pallet did not name was removed: %v", err)
		}
		if _, err := Open(dir); err != nil { // tagged now
			t.Fatal(err)
		}
	})
	t.Run("a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "notes")
		writeFile(t, file, []byte("user data"))
		if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "it is not a directory (a file)") {
			t.Fatalf("got %v", err)
		}
		if data, err := os.ReadFile(file); err != nil || string(data) != "user data" {
			t.Errorf("the file became %q (%v)", data, err)
		}
	})
	t.Run("new", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new")
		if _, err := Open(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err != nil {
			t.Fatal(err)
		}
	})
}

// Builds opening one new cache at the same time all get it: one may see
// the tag another wrote beside directories not all made yet.
func TestOpenNewCacheConcurrently(t *testing.T) {
	for range 300 {
		dir := filepath.Join(t.TempDir(), "cache")
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				_, err := Open(dir)
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}
