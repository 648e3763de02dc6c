package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A source pinned to a tree's or a blob's name (a tag of a tree copied
// by hand, a rev-parse of HEAD:path) is said to name that, at the
// commit: line, where the build said the commit was not in the
// repository, which it is, as another kind of object.
func TestGitCommitNamingTreeOrBlob(t *testing.T) {
	needTool(t, "git")
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n\nfunc main() {}\n")
	fixture.Git(t, repo, "init", "-q", "-b", "main")
	fixture.Git(t, repo, "add", "-A")
	fixture.Git(t, repo, "commit", "-q", "-m", "one")
	for typ, rev := range map[string]string{"tree": "HEAD^{tree}", "blob": "HEAD:main.go"} {
		obj := fixture.Git(t, repo, "rev-parse", rev)
		file := filepath.Join(t.TempDir(), "pallet.yaml")
		writeFile(t, file, `version: 1
artifacts:
  app:
    default: source
    modes:
      source:
        git:
          repo: file://`+repo+`
          commit: `+obj+`
        go:
          packages: [.]
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /bin/}
`)
		_, err := pallet(t, "build", "-q", "-f", file, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		if err == nil || !strings.Contains(err.Error(), file+":9:") || !strings.Contains(err.Error(), "names a "+typ+", not a commit") {
			t.Errorf("a commit: naming a %s: %v", typ, err)
		}
	}
}
