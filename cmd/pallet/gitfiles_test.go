package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitFilesRecipe takes scripts from the repository by tag, for Linux
// and Windows each from its own directory.
const gitFilesRecipe = `version: 1
artifacts:
  scripts:
    version: 1.0.0
    default: source
    modes:
      source:
        git:
          repo: GIT
          tag: v{{version}}
          path: hack/{{os}}
      local: {}
images:
  node:
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: scripts, dest: /opt/scripts/}
`

// A source mode with a git path and no go section takes the commit's
// files as they are, once pallet lock has pinned the tag's commit; the
// record says which commit and path, and the licence is the repository's.
func TestGitFilesBuild(t *testing.T) {
	needTool(t, "git")
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "LICENSE"), "Apache License\nVersion 2.0, January 2004\n")
	writeFile(t, filepath.Join(repo, "hack/linux/install.sh"), "#!/bin/sh\necho linux\n")
	if err := os.Chmod(filepath.Join(repo, "hack/linux/install.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "hack/windows/Install.ps1"), "Write-Host windows\n")
	lockGit(t, repo, "init", "-q", "-b", "main")
	lockGit(t, repo, "add", "-A")
	lockGit(t, repo, "commit", "-q", "-m", "scripts")
	lockGit(t, repo, "tag", "v1.0.0")
	commit := lockGit(t, repo, "rev-parse", "HEAD")

	file := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, file, strings.Replace(gitFilesRecipe, "GIT", "file://"+repo, 1))
	mustPallet(t, "lock", "-f", file)
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "commit: "+commit) {
		t.Fatalf("locked recipe:\n%s", b)
	}

	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", file, "-o", "oci:"+out)
	linux := readImageFiles(t, out, "linux/amd64")
	if got := linux["opt/scripts/install.sh"]; got != "#!/bin/sh\necho linux\n (755)" {
		t.Errorf("linux image: install.sh %q in %v", got, slices.Sorted(maps.Keys(linux)))
	}
	if _, ok := linux["opt/scripts/Install.ps1"]; ok {
		t.Error("the linux image has the windows script")
	}
	windows := readImageFiles(t, out, "windows/amd64")
	if got := windows["Files/opt/scripts/Install.ps1"]; !strings.HasPrefix(got, "Write-Host windows\n") {
		t.Errorf("windows image: Install.ps1 %q in %v", got, slices.Sorted(maps.Keys(windows)))
	}

	rec := readRecord(t, out+".record.json")
	var seen int
	for _, a := range rec.Artifacts {
		if a.Name != "scripts" {
			continue
		}
		seen++
		o := a.Origin
		if a.Kind != "git-files" || o.Repo != "file://"+repo || o.Commit != commit || o.Tag != "v1.0.0" || o.GitPath != "hack/"+strings.Split(a.Platform, "/")[0] {
			t.Errorf("record of %s: %+v", a.Platform, a.Record)
		}
		if !slices.Equal(a.Licenses, []string{"LICENSE"}) {
			t.Errorf("licences of %s: %v", a.Platform, a.Licenses)
		}
	}
	if seen != 2 {
		t.Errorf("%d records of scripts, want one per platform", seen)
	}

	// A path that is not at the commit is blamed on its line.
	locked, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, strings.Replace(string(locked), "path: hack/{{os}}", "path: hack/{{os}}/missing", 1))
	if _, err := pallet(t, "build", "-q", "-f", file, "-o", "oci:"+filepath.Join(t.TempDir(), "o2")); err == nil || !strings.Contains(err.Error(), file+":12") || !strings.Contains(err.Error(), "/missing at that commit") {
		t.Errorf("a missing path: %v", err)
	}
}
