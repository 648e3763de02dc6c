package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A go section's package named without ./ (cmd/x) is read by the go
// command as the standard library's: where the module has that directory,
// the error asks whether ./cmd/x was meant.
func TestGoPackageWithoutDotHint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "cmd", "x", "main.go"), "package main\n\nfunc main() {}\n")
	file := filepath.Join(dir, "pallet.yaml")
	writeFile(t, file, `version: 1
artifacts:
  app:
    go:
      module: app
      packages: [cmd/x, cmd/nothere]
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	_, err := pallet(t, "build", "-q", "-f", file, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil {
		t.Fatal("cmd/x, read as the standard library's, was built")
	}
	if !strings.Contains(err.Error(), "pallet.yaml:6: ") {
		t.Errorf("the error is not at the packages: line (pallet.yaml:6):\n%v", err)
	}
	if !strings.Contains(err.Error(), "did you mean ./cmd/x?") {
		t.Errorf("the error does not ask for ./cmd/x:\n%v", err)
	}
	if strings.Contains(err.Error(), "./cmd/nothere") {
		t.Errorf("the error suggests a directory the module does not have:\n%v", err)
	}
}

// The same of a git source: its module's path has a dot, and go still
// reads cmd/x as the standard library's.
func TestGoPackageWithoutDotHintGit(t *testing.T) {
	needTool(t, "git")
	root := t.TempDir()
	src := filepath.Join(root, "src")
	writeFile(t, filepath.Join(src, "go.mod"), "module example.com/tool\n\ngo 1.21\n")
	writeFile(t, filepath.Join(src, "cmd", "x", "main.go"), "package main\n\nfunc main() {}\n")
	lockGit(t, src, "init", "-q", "-b", "main")
	lockGit(t, src, "add", "-A")
	lockGit(t, src, "commit", "-q", "-m", "tool")
	commit := lockGit(t, src, "rev-parse", "HEAD")
	file := filepath.Join(root, "pallet.yaml")
	writeFile(t, file, `version: 1
artifacts:
  tool:
    licenses: none
    default: source
    modes:
      source:
        git: {repo: file://`+src+`, commit: `+commit+`}
        go:
          packages: [cmd/x]
images:
  tool:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /bin/}
`)
	_, err := pallet(t, "build", "-q", "-f", file, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(root, "out"))
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml:10: ") || !strings.Contains(err.Error(), "did you mean ./cmd/x?") {
		t.Errorf("err %v, want one at the packages: line (pallet.yaml:10) asking for ./cmd/x", err)
	}
}
