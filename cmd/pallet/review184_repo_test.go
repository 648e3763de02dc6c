package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The relative-repo check refuses only what git takes from its working
// directory: an absolute path, a file:// URL, one an arg's default gives, and
// scp-like and ssh:// remotes (which fail here offline, but not as
// relative paths) are let through.
func TestReview184GitRepoFormsNotRefused(t *testing.T) {
	needTool(t, "git")
	root := t.TempDir()
	src := filepath.Join(root, "src", "tool")
	writeFile(t, filepath.Join(src, "go.mod"), "module example.com/tool\n\ngo 1.21\n")
	writeFile(t, filepath.Join(src, "main.go"), "package main\n\nfunc main() {}\n")
	lockGit(t, src, "init", "-q", "-b", "main")
	lockGit(t, src, "add", "-A")
	lockGit(t, src, "commit", "-q", "-m", "tool")
	lockGit(t, src, "tag", "v1.0.0")
	t.Setenv("GIT_SSH_COMMAND", "false")
	dir := filepath.Join(root, "recipe")
	file := filepath.Join(dir, "pallet.yaml")
	for _, c := range []struct {
		repo   string
		arg    string // REPO's default, which lock expands
		remote bool   // unreachable here: only its error is checked
	}{
		{repo: src},
		{repo: "file://" + src},
		{repo: `"{{REPO}}"`, arg: src},
		{repo: "git@github.invalid:org/tool.git", remote: true},
		{repo: "ssh://git@github.invalid/org/tool.git", remote: true},
	} {
		recipe := strings.Replace(strings.Replace(newUserGitRecipe, "COMMIT", "", 1), "repo: ../src/tool", "repo: "+c.repo, 1)
		if c.arg != "" {
			recipe = strings.Replace(recipe, "version: 1\n", "version: 1\nargs:\n  REPO: "+c.arg+"\n", 1)
		}
		writeFile(t, file, recipe)
		out, err := pallet(t, "lock", "-f", file)
		t.Logf("repo %s: %v", c.repo, err)
		if c.remote {
			if err == nil || strings.Contains(err.Error(), "relative path") {
				t.Errorf("repo %s: %v", c.repo, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("repo %s: %v\n%s", c.repo, err, out)
		}
	}
}
