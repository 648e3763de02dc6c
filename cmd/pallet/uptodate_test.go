package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
	"github.com/pallet-dev/pallet/internal/uptodate"
)

// A build whose inputs and outputs have not changed since the last one
// answers from the note that build left, reading and writing nothing;
// any change to an input, an output, the recipe's arguments or the files
// it names brings the whole build back, which repairs the outputs.
func TestUpToDate(t *testing.T) {
	var downloads atomic.Int32
	archive := []byte("a release file\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		w.Write(archive)
	}))
	defer srv.Close()
	sum := sha256.Sum256(archive)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tree", "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "tree", "sub", "b.txt"), "b\n")
	writeFile(t, filepath.Join(dir, "one.bin"), "one\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
args:
  GREETING: hello
artifacts:
  tree:
    local: {path: ./tree}
    licenses: none
  one:
    local: {path: ./one.bin}
    licenses: none
  release:
    url:
      url: "`+srv.URL+`/release.txt"
      sha256: `+hex.EncodeToString(sum[:])+`
    licenses: none
images:
  app:
    repository: example.com/app
    tags: [v1]
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tree, dest: /tree/}
      - {artifact: one, dest: /bin/one}
      - {artifact: release, dest: /release.txt}
    config:
      env: ["GREETING={{GREETING}}"]
`)
	cacheDir := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	archiveOut := filepath.Join(t.TempDir(), "app.tar")
	build := func(args ...string) string {
		t.Helper()
		return mustPallet(t, append([]string{"build", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:" + out, "-o", "docker:" + archiveOut}, args...)...)
	}
	upToDate := func(s string) bool { return strings.Contains(s, "up to date") }

	// Everything written within the settling time is not trusted to
	// keep its stamp; a real source tree is older than that.
	first := build()
	if upToDate(first) {
		t.Fatalf("the first build was up to date:\n%s", first)
	}
	if s := build(); upToDate(s) {
		t.Fatalf("inputs written %s ago were taken as settled:\n%s", uptodate.Settle, s)
	}
	time.Sleep(uptodate.Settle + 100*time.Millisecond)
	if s := build(); upToDate(s) {
		t.Fatalf("no note was left, yet the build was up to date:\n%s", s)
	}
	digest := layoutIndex(t, out).Manifests[0].Digest
	before := stamps(t, out, archiveOut)
	got := build("-q")
	if !upToDate(build()) {
		t.Fatalf("nothing changed, but the build was not up to date")
	}
	if after := stamps(t, out, archiveOut); after != before {
		t.Fatalf("an up-to-date build changed its outputs:\n%s\n%s", before, after)
	}
	if lines := strings.Fields(got); len(lines) != 2 || lines[0] != digest.String() || lines[1] != digest.String() {
		t.Fatalf("-q printed %q, want the digest %s once per output", got, digest)
	}
	if full := mustPallet(t, "build", "-f", recipe, "--no-cache", "-q", "-o", "oci:"+filepath.Join(t.TempDir(), "o"), "-o", "docker:"+filepath.Join(t.TempDir(), "a.tar")); full != got {
		t.Fatalf("-q printed %q when up to date, %q from a full build", got, full)
	}
	fetched := downloads.Load()

	// An output blob rewritten in place (same size): a full build, which
	// puts the right bytes back, then up to date again.
	blob := filepath.Join(out, "blobs", "sha256", digest.Hex)
	b, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, append([]byte{b[0] ^ 1}, b[1:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := build(); upToDate(s) {
		t.Fatalf("a corrupted output was taken as up to date:\n%s", s)
	}
	verifyBlobs(t, out)
	if !upToDate(build()) {
		t.Fatal("not up to date after the output was repaired")
	}

	// The archive output removed.
	if err := os.Remove(archiveOut); err != nil {
		t.Fatal(err)
	}
	if s := build(); upToDate(s) {
		t.Fatalf("a missing output was taken as up to date:\n%s", s)
	}
	if _, err := os.Stat(archiveOut); err != nil {
		t.Fatal(err)
	}

	// Another argument is another build; back to the first, the outputs
	// are the other build's, so a full build again.
	if s := build("--arg", "GREETING=bye"); upToDate(s) {
		t.Fatalf("a changed argument was taken as up to date:\n%s", s)
	}
	if s := build(); upToDate(s) {
		t.Fatalf("outputs of another build were taken as up to date:\n%s", s)
	}
	if !upToDate(build()) {
		t.Fatal("not up to date")
	}
	if layoutIndex(t, out).Manifests[0].Digest != digest {
		t.Fatal("the image changed")
	}
	if downloads.Load() != fetched {
		t.Fatalf("the pinned download was fetched again (%d times, %d before)", downloads.Load(), fetched)
	}

	// A file in the local tree rewritten with the same size and its
	// modification time put back: the change time tells.
	a := filepath.Join(dir, "tree", "a.txt")
	info, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(a, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if s := build(); upToDate(s) {
		t.Fatalf("a rewritten input was taken as up to date:\n%s", s)
	}
	if layoutIndex(t, out).Manifests[0].Digest == digest {
		t.Fatal("the image did not change with its input")
	}
	// Changed less than the settling time ago: no note, so no answer.
	if s := build(); upToDate(s) {
		t.Fatalf("an unsettled input was taken as up to date:\n%s", s)
	}

	// A file added deep in the tree.
	time.Sleep(uptodate.Settle + 100*time.Millisecond)
	build()
	if !upToDate(build()) {
		t.Fatal("not up to date")
	}
	writeFile(t, filepath.Join(dir, "tree", "sub", "c.txt"), "c\n")
	if s := build(); upToDate(s) {
		t.Fatalf("an added input was taken as up to date:\n%s", s)
	}

	// --no-cache never answers from a note.
	if s := build("--no-cache"); upToDate(s) {
		t.Fatalf("--no-cache was up to date:\n%s", s)
	}

	// The recipe's bytes reach the provenance, comments included: an
	// edited comment is a full build, and another image.
	time.Sleep(uptodate.Settle + 100*time.Millisecond)
	build("--provenance")
	if !upToDate(build("--provenance")) {
		t.Fatal("not up to date")
	}
	// The provenance is a referrer: an entry of index.json of its own.
	withProvenance, err := os.ReadFile(filepath.Join(out, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(recipe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recipe, append(text, "# a comment\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := build("--provenance"); upToDate(s) {
		t.Fatalf("an edited recipe was taken as up to date:\n%s", s)
	}
	if now, err := os.ReadFile(filepath.Join(out, "index.json")); err != nil || string(now) == string(withProvenance) {
		t.Fatalf("the provenance did not change with the recipe (%v)", err)
	}
	// Timestamps make every provenance another: never up to date.
	time.Sleep(uptodate.Settle + 100*time.Millisecond)
	build("--provenance", "--provenance-timestamps")
	if s := build("--provenance", "--provenance-timestamps"); upToDate(s) {
		t.Fatalf("a provenance with timestamps was taken as up to date:\n%s", s)
	}
}

// stamps describes the files under paths by name, size, inode and times:
// what changes when anything writes them.
func stamps(t *testing.T, paths ...string) string {
	t.Helper()
	var b strings.Builder
	for _, root := range paths {
		err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			st := tree.StampOf(info)
			fmt.Fprintf(&b, "%s %d %d %d %d\n", p, st.Size, st.Ino, st.ModTime, st.CTime)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
