package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/uptodate"
)

// A local path that is a link to a directory (a current -> releases/v2
// kept beside the recipe, or given with --mode NAME=local:PATH) places
// the directory it leads to, as a link to a file places the file: the
// artifact was the link's own, empty tree, and the image got an empty
// directory with no word said.
func TestLocalPathLinkToDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "releases", "v2", "bin", "tool"), "tool\n")
	writeFile(t, filepath.Join(dir, "releases", "v2", "LICENSE"), "MIT\n")
	if err := os.Symlink(filepath.Join("releases", "v2"), filepath.Join(dir, "current")); err != nil {
		t.Fatal(err)
	}
	recipe := func(path string) string {
		f := filepath.Join(dir, strings.ReplaceAll(path, "/", "-")+".yaml")
		writeFile(t, f, `version: 1
artifacts:
  tool: {local: {path: `+path+`}}
  moded:
    default: local
    modes:
      local: {}
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /opt/tool/}
      - {artifact: moded, dest: /opt/moded/}
`)
		return f
	}
	build := func(f, mode string) string {
		return strings.TrimSpace(mustPallet(t, "build", "-q", "--no-cache", "-f", f, "--mode", "moded=local:"+mode, "-o", "oci:"+filepath.Join(t.TempDir(), "o")))
	}
	want := build(recipe("./releases/v2"), filepath.Join(dir, "releases", "v2"))
	out := filepath.Join(t.TempDir(), "o")
	got := strings.TrimSpace(mustPallet(t, "build", "-q", "--no-cache", "-f", recipe("./current"), "--mode", "moded=local:"+filepath.Join(dir, "current"), "-o", "oci:"+out))
	if got != want {
		t.Errorf("through the link: %s, want %s, as from the directory", got, want)
	}
	files := readImageFiles(t, out, "linux/amd64")
	for _, p := range []string{"opt/tool/bin/tool", "opt/moded/bin/tool", "LICENSES/tool/LICENSE", "LICENSES/moded/LICENSE"} {
		if _, ok := files[p]; !ok {
			t.Errorf("the image lacks %s: %v", p, files)
		}
	}
}

// The up-to-date note of a build placing a directory through a link
// stamps what the link leads to: an edit there, or the link pointed
// elsewhere, brings the build back; and a cache directory inside the
// directory the link leads to is refused as one inside the path itself
// is. Each held when the link was first followed.
func TestLocalPathLinkToDirectoryStamped(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "v1", "bin", "tool"), "one\n")
	writeFile(t, filepath.Join(dir, "v2", "bin", "tool"), "two\n")
	link := filepath.Join(dir, "current")
	if err := os.Symlink("v1", link); err != nil {
		t.Fatal(err)
	}
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  tool: {local: {path: ./current}, licenses: none}
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /opt/tool/}
`)
	out := filepath.Join(t.TempDir(), "out")
	build := func(cacheDir string) (string, error) {
		return pallet(t, "build", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:"+out)
	}
	if _, err := build(filepath.Join(dir, "v1", "cache")); err == nil || !strings.Contains(err.Error(), "is inside the local path of artifact tool") {
		t.Errorf("a cache directory inside the directory the link leads to: %v, want it refused", err)
	}
	cacheDir := t.TempDir()
	upToDate := func() bool {
		t.Helper()
		s, err := build(cacheDir)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(s, "up to date")
	}
	upToDate()
	time.Sleep(uptodate.Settle + 100*time.Millisecond)
	upToDate()
	if !upToDate() {
		t.Fatal("nothing changed, but the build was not up to date")
	}
	tool := filepath.Join(dir, "v1", "bin", "tool")
	info, err := os.Stat(tool)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, tool, "uno\n")
	if err := os.Chtimes(tool, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if upToDate() {
		t.Error("a file the link leads to was rewritten, yet the build was up to date")
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("v2", link); err != nil {
		t.Fatal(err)
	}
	if upToDate() {
		t.Error("the link was pointed elsewhere, yet the build was up to date")
	}
	if got := readImageFiles(t, out, "linux/amd64")["opt/tool/bin/tool"]; !strings.HasPrefix(got, "two\n") {
		t.Errorf("the image holds %q, want the file the link now leads to", got)
	}
}
