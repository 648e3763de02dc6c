package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// newUserGitRecipe is what a new user writes for a checkout beside the
// recipe: repo as a path relative to the recipe, as a local path is.
const newUserGitRecipe = `version: 1
artifacts:
  tool:
    default: source
    modes:
      source:
        git:
          repo: ../src/tool
          tag: v1.0.0
          COMMIT
        go: {packages: [.]}
images:
  tool:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /bin/}
`

// A git repo given as a relative path was taken by git from the build's
// own work directory (and by lock from the shell's), so lock pinned it
// from the recipe's directory and the build then failed with git's
// "does not appear to be a git repository", naming neither the line nor
// what to write. Both refuse it at the repo line, naming the URL that
// would have meant the recipe's neighbour.
func TestNewUserRelativeGitRepo(t *testing.T) {
	needTool(t, "git")
	root := t.TempDir()
	src := filepath.Join(root, "src", "tool")
	writeFile(t, filepath.Join(src, "go.mod"), "module example.com/tool\n\ngo 1.21\n")
	writeFile(t, filepath.Join(src, "main.go"), "package main\n\nfunc main() {}\n")
	lockGit(t, src, "init", "-q", "-b", "main")
	lockGit(t, src, "add", "-A")
	lockGit(t, src, "commit", "-q", "-m", "tool")
	lockGit(t, src, "tag", "v1.0.0")
	commit := lockGit(t, src, "rev-parse", "HEAD")

	dir := filepath.Join(root, "recipe")
	file := filepath.Join(dir, "pallet.yaml")
	want := `pallet.yaml:8: artifact tool: repo "../src/tool" is a relative path`
	hint := "file://" + src

	// From the recipe's directory, where the path happens to resolve.
	writeFile(t, file, strings.Replace(newUserGitRecipe, "COMMIT", "", 1))
	t.Chdir(dir)
	_, err := pallet(t, "lock", "-f", "pallet.yaml")
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), hint) {
		t.Errorf("lock of a relative repo: err %v", err)
	}

	writeFile(t, file, strings.Replace(newUserGitRecipe, "COMMIT", "commit: "+commit, 1))
	out, err := pallet(t, "build", "-f", "pallet.yaml", "-o", "oci:"+filepath.Join(root, "out"))
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), hint) {
		t.Errorf("build of a relative repo: err %v\n%s", err, out)
	}
}

// A slip in a built-in base's name (windows-hostprocess, scrach) is a
// valid Docker Hub name, so it was looked up there: the user saw a
// failed pull, or offline a DNS error, never the name meant. It is
// refused at the base line, naming the built-in and how to mean the
// Docker Hub image.
func TestNewUserBuiltinBaseSlip(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "conf", "agent.conf"), "x: 1\n")
	for _, c := range []struct{ base, want string }{
		{"windows-hostprocess", "did you mean windows-hostprocess-scratch?"},
		{"hostprocess-scratch-v1", "did you mean windows-hostprocess-scratch-v1?"},
		{"scrach", "did you mean scratch?"},
	} {
		file := filepath.Join(dir, "pallet.yaml")
		writeFile(t, file, `version: 1
artifacts:
  conf: {local: {path: ./conf/agent.conf}, licenses: none}
images:
  agent:
    base: `+c.base+`
    platforms: [windows/amd64]
    files:
      - {artifact: conf, dest: /k/agent.conf}
`)
		_, err := pallet(t, "build", "--offline", "-f", file, "-o", "oci:"+filepath.Join(dir, "out"))
		if err == nil || !strings.Contains(err.Error(), "pallet.yaml:6: ") || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), "docker.io/library/"+c.base) {
			t.Errorf("base %s: err %v", c.base, err)
		}
		// A Dockerfile's FROM is checked by the same rule (image.CheckBaseRef).
		df := filepath.Join(dir, "Dockerfile")
		writeFile(t, df, "FROM --platform=windows/amd64 "+c.base+"\nCOPY conf/agent.conf /k/agent.conf\n")
		_, err = pallet(t, "build", "--offline", "-f", df, "--platform", "windows/amd64", "-o", "oci:"+filepath.Join(dir, "out"))
		if err == nil || !strings.Contains(err.Error(), "Dockerfile:1") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FROM %s: err %v", c.base, err)
		}
	}
}

// A gomod package written as in the module's tree (plugins/main/bridge,
// without ./) is a standard-library path to the go command: the build
// fetched the module, switched from go install to go build, and failed
// with go's "is not in std" at the section's line. It is refused at the
// package's line before anything is fetched, with the ./ form to write.
func TestNewUserGomodPackageWithoutDot(t *testing.T) {
	t.Setenv("GOPROXY", "off") // nothing is to be fetched, and the module is made up
	dir := t.TempDir()
	file := filepath.Join(dir, "pallet.yaml")
	writeFile(t, file, `version: 1
artifacts:
  cni:
    gomod:
      module: example.com/plugins
      version: v1.0.0
      sum: h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
      packages: [./plugins/ipam/host-local, plugins/main/bridge]
images:
  cni:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: cni, dest: /opt/cni/bin/}
`)
	want := `pallet.yaml:8: artifact cni: package "plugins/main/bridge" is not a package of example.com/plugins`
	for _, args := range [][]string{
		{"build", "--offline", "-f", file, "-o", "oci:" + filepath.Join(dir, "out")},
		{"lock", "--check", "-f", file},
	} {
		_, err := pallet(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "./plugins/main/bridge") {
			t.Errorf("pallet %s: err %v", args[0], err)
		}
	}
}

// A gomod version written as releases are named (1.6.2) was refused as
// "not a semantic version", which it looks like; the error now says the
// v is missing, at the version line.
func TestNewUserGomodVersionWithoutV(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	dir := t.TempDir()
	file := filepath.Join(dir, "pallet.yaml")
	writeFile(t, file, `version: 1
artifacts:
  cni:
    gomod:
      module: example.com/plugins/v2
      version: 2.1.0
      packages: [./plugins/ipam/host-local]
images:
  cni:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: cni, dest: /opt/cni/bin/}
`)
	want := "pallet.yaml:6: artifact cni: example.com/plugins/v2@2.1.0: invalid version: a module version begins with v (write v2.1.0)"
	for _, args := range [][]string{
		{"build", "--offline", "-f", file, "-o", "oci:" + filepath.Join(dir, "out")},
		{"lock", "-f", file},
	} {
		_, err := pallet(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pallet %s: err %v", args[0], err)
		}
	}
}

// A Windows image on scratch builds, as an image to copy from, with a
// warning that a node cannot run it, naming the built-in base to give
// for a container; on that base, no warning.
func TestWindowsOnScratchWarns(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "conf", "agent.conf"), "x: 1\n")
	for base, warns := range map[string]bool{"scratch": true, "windows-hostprocess-scratch": false} {
		file := filepath.Join(dir, "pallet.yaml")
		writeFile(t, file, `version: 1
artifacts:
  conf: {local: {path: ./conf/agent.conf}, licenses: none}
images:
  agent:
    base: {linux: scratch, windows: `+base+`}
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: conf, dest: /k/agent.conf}
`)
		_, stderr, err := palletOut(t, "build", "-f", file, "-o", "oci:"+filepath.Join(dir, "out"))
		if err != nil {
			t.Fatalf("base %s: %v", base, err)
		}
		said := strings.Contains(stderr, "pallet.yaml:6:5: image agent (windows/amd64): on scratch, a Windows image has no base layer") && strings.Contains(stderr, "give windows-hostprocess-scratch")
		if said != warns || strings.Contains(stderr, "(linux/amd64): on scratch") {
			t.Errorf("base %s: warned %v, want %v:\n%s", base, said, warns, stderr)
		}
	}
}
