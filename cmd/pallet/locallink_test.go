package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
