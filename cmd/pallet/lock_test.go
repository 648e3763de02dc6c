package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// lockRecipe names its pins nowhere: a git source by tag, whose commit
// and tag the binary is told through ldflags, and per-platform release
// archives listed in a SHA256SUMS file.
const lockRecipe = `# pins are pallet lock's job
version: 1
args:
  REL: SRV
artifacts:
  app:
    default: source
    modes:
      source:
        git:
          repo: GIT
          tag: v1.0.0        # moves in the test
        go:
          packages: .
          ldflags: ["-X main.commit={{commit}}", "-X main.tag={{tag}}"]
    licenses: none
  cni:
    url:
      url: "{{REL}}/cni-{{arch}}.tar"
      checksums: "{{REL}}/SHA256SUMS"
      extract: {}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: app
        dest: /bin/
        platforms: [linux/amd64]
      - artifact: cni
        dest: /opt/cni/
`

// lockGit runs git in dir.
func lockGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return fixture.Git(t, dir, args...)
}

// builtApp builds the recipe and returns the app binary placed in the
// linux/amd64 image.
func builtApp(t *testing.T, file string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", file, "-o", "oci:"+out)
	files := readImageFiles(t, out, "linux/amd64")
	bin, ok := files["bin/app"]
	if !ok {
		t.Fatalf("no bin/app in the image: %v", files)
	}
	if cni := readImageFiles(t, out, "linux/arm64")["opt/cni/cni.txt"]; cni != "arm64 (644)" {
		t.Errorf("arm64 cni: %q", cni)
	}
	return []byte(strings.TrimSuffix(bin, " (755)"))
}

// runApp runs the binary where the host can, and returns what it prints.
func runApp(t *testing.T, bin []byte) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return ""
	}
	p := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p).Output()
	if err != nil {
		t.Fatalf("running the built app: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// A recipe without pins is refused by build, flagged by lock --check,
// locked by lock and then built; the binary carries the commit {{commit}}
// expanded to. A tag moved upstream fails lock and lock --check and is
// re-pinned only by lock --update, and the rebuilt binary carries the
// new commit.
func TestLockThenBuild(t *testing.T) {
	needTool(t, "git")
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n\nimport \"fmt\"\n\nvar commit, tag string\n\nfunc main() { fmt.Println(commit, tag) }\n")
	lockGit(t, repo, "init", "-q", "-b", "main")
	lockGit(t, repo, "add", "-A")
	lockGit(t, repo, "commit", "-q", "-m", "v1.0.0")
	lockGit(t, repo, "tag", "-a", "-m", "v1.0.0", "v1.0.0")
	first := lockGit(t, repo, "rev-parse", "HEAD")

	archives := map[string][]byte{}
	sums := ""
	for _, arch := range []string{"amd64", "arm64"} {
		archives["/cni-"+arch+".tar"] = fixture.Tar([]fixture.File{{Name: "cni.txt", Content: arch, Mode: 0o644}})
		sums += fixture.SHA256(archives["/cni-"+arch+".tar"]) + "  cni-" + arch + ".tar\n"
	}
	archives["/SHA256SUMS"] = []byte(sums)
	srv := fixture.Serve(t, archives)

	file := filepath.Join(t.TempDir(), "pallet.yaml")
	src := strings.NewReplacer("SRV", srv.URL, "GIT", "file://"+repo).Replace(lockRecipe)
	writeFile(t, file, src)

	if _, err := pallet(t, "build", "-q", "-f", file, "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), file+":") {
		t.Fatalf("build of an unpinned recipe: %v", err)
	}
	out, err := pallet(t, "lock", "--check", "-f", file)
	if code, _ := exitStatus(context.Background(), err); code != 1 || !strings.Contains(err.Error(), "3 pin(s) missing, 0 stale") {
		t.Fatalf("lock --check of an unpinned recipe: exit %d, %v\n%s", code, err, out)
	}

	out = mustPallet(t, "lock", "-f", file)
	if !strings.Contains(out, "wrote 3 pin(s) into "+file) {
		t.Errorf("lock output:\n%s", out)
	}
	locked, _ := os.ReadFile(file)
	if !strings.Contains(string(locked), "          repo: file://"+repo+"\n          commit: "+first+"\n          tag: v1.0.0        # moves in the test\n") {
		t.Errorf("locked recipe:\n%s", locked)
	}
	mustPallet(t, "lock", "--check", "-f", file)

	bin := builtApp(t, file)
	if !strings.Contains(string(bin), first) {
		t.Error("the commit is not in the built binary")
	}
	if got := runApp(t, bin); got != "" && got != first+" v1.0.0" {
		t.Errorf("the app prints %q, want %q", got, first+" v1.0.0")
	}

	// Upstream moves the tag.
	writeFile(t, filepath.Join(repo, "README"), "moved\n")
	lockGit(t, repo, "add", "-A")
	lockGit(t, repo, "commit", "-q", "-m", "v1.0.0 again")
	lockGit(t, repo, "tag", "-f", "-a", "-m", "v1.0.0", "v1.0.0")
	moved := lockGit(t, repo, "rev-parse", "HEAD")
	for _, args := range [][]string{{"lock", "--check"}, {"lock"}} {
		_, err := pallet(t, append(args, "-f", file)...)
		if code, _ := exitStatus(context.Background(), err); code != 1 || !strings.Contains(err.Error(), "commit of tag v1.0.0 is "+first+" in the recipe, but file://"+repo+" now gives "+moved) {
			t.Errorf("%v after the tag moved: exit %d, %v", args, code, err)
		}
		if now, _ := os.ReadFile(file); string(now) != string(locked) {
			t.Errorf("%v re-pinned a moved tag without --update", args)
		}
	}
	mustPallet(t, "lock", "--update", "-f", file)
	if now, _ := os.ReadFile(file); string(now) != strings.Replace(string(locked), first, moved, 1) {
		t.Errorf("after --update:\n%s", now)
	}
	bin = builtApp(t, file)
	if !strings.Contains(string(bin), moved) || strings.Contains(string(bin), first) {
		t.Error("the rebuilt binary does not carry the new commit alone")
	}
	if got := runApp(t, bin); got != "" && got != moved+" v1.0.0" {
		t.Errorf("the rebuilt app prints %q, want %q", got, moved+" v1.0.0")
	}
}

func TestLockFlagErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--check", "--update", "-f", filepath.Join(dir, "pallet.yaml")}, "--check writes nothing"},
		{[]string{"-f", filepath.Join(dir, "Dockerfile")}, "is a Dockerfile"},
		{[]string{"-f", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{filepath.Join(dir, "pallet.yaml")}, "pallet lock takes no arguments, and got \"" + filepath.Join(dir, "pallet.yaml") + "\": name the file to read with -f FILE"},
	} {
		if _, err := pallet(t, append([]string{"lock"}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("lock %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The kind-base example's hand-written pins all check out against its
// stand-in upstream, and pins taken out of it are written back exactly
// as they were: the file, comments and all, comes back byte for byte.
func TestLockKindExample(t *testing.T) {
	needTool(t, "git")
	dir := t.TempDir()
	if _, err := fixture.WriteKindRepos(filepath.Join(dir, "git"), filepath.Join("..", "..", "examples", "kind-base", "modules")); err != nil {
		t.Fatal(err)
	}
	srv := fixture.Serve(t, fixture.KindReleases())
	file := copyExample(t, "kind-base")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// lock pins the recipe as written, with its args' defaults: point
	// them at the stand-ins.
	full := strings.NewReplacer("  GIT: file:///tmp/kind-upstream/git\n", "  GIT: file://"+filepath.Join(dir, "git")+"\n",
		"  RELEASES: http://127.0.0.1:8766\n", "  RELEASES: "+srv.URL+"\n").Replace(string(data))
	if full == string(data) {
		t.Fatal("the example's args changed; update this test")
	}
	writeFile(t, file, full)
	out := mustPallet(t, "lock", "--check", "-f", file)
	if !strings.Contains(out, "12 pin(s) checked, all current") {
		t.Errorf("lock --check on the example:\n%s", out)
	}

	// Take out a commit and one platform's digest; lock puts them back.
	// The first commit pin stands for all of them: the stand-ins' commits
	// follow their content, which other tests change.
	var kept []string
	removed, commits := 0, 0
	for _, line := range strings.SplitAfter(full, "\n") {
		if strings.Contains(line, " commit: ") {
			commits++
		}
		if (commits == 1 && strings.Contains(line, " commit: ")) || strings.Contains(line, "linux/arm64: 65aa355112dfb191d33456fdfad9f46a1b17ea75bb50226c2d8894d07f33d170") {
			removed++
			continue
		}
		kept = append(kept, line)
	}
	if removed != 2 {
		t.Fatalf("removed %d lines; the example's pins changed, update this test", removed)
	}
	writeFile(t, file, strings.Join(kept, ""))
	if _, err := pallet(t, "lock", "--check", "-f", file); err == nil || !strings.Contains(err.Error(), "2 pin(s) missing, 0 stale") {
		t.Errorf("lock --check without two pins: %v", err)
	}
	mustPallet(t, "lock", "-q", "-f", file)
	if got, _ := os.ReadFile(file); string(got) != full {
		t.Errorf("locked example differs from the original:\n%s", got)
	}
}

// pallet lock writes the go.sum hash of a gomod module version, as a
// kind and as a source mode, where --check reported it missing; a build
// then reads the recipe.
func TestLockGomodSum(t *testing.T) {
	sum, _ := serveModule(t, gomodPath, "v1.0.0", nil, map[string]string{
		"go.mod":            "module " + gomodPath + "\n\ngo 1.22\n",
		"cmd/hello/main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	})
	file := gomodRecipe(t, "linux/amd64", "")
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pallet(t, "lock", "--check", "-f", file)
	if err == nil || !strings.Contains(err.Error(), "2 pin(s) missing, 0 stale") || !strings.Contains(err.Error(), "artifact hello-src: no sum of "+gomodPath+"@v1.0.0 (the module proxy gives "+sum+")") {
		t.Fatalf("lock --check of a recipe without sums: %v", err)
	}
	if _, err := pallet(t, "lock", "-f", file); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The sum goes after the colon; every other byte stays, the space
	// after it included.
	if want := strings.ReplaceAll(string(before), "sum: \n", "sum: "+sum+" \n"); string(after) != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", after, want)
	}
	if out, err := pallet(t, "lock", "--check", "-f", file); err != nil || !strings.Contains(out, "2 pin(s) checked, all current") {
		t.Errorf("lock --check after lock: %q, %v", out, err)
	}
}
