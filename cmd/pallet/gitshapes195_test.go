package main

import (
	"fmt"
	"io"
	"io/fs"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitSmartHTTP serves the bare repositories under root over git's smart
// HTTP protocol (git http-backend, as behind a forge's web server) and
// returns its URL. The server asks for no credentials and ignores any
// it is sent.
func gitSmartHTTP(t *testing.T, root string) string {
	t.Helper()
	needTool(t, "git")
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path:   backend,
		Stderr: io.Discard,
		Env:    []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// A repository URL with a token in it (https://user:TOKEN@host/..., the
// form a CI job is handed) reaches neither the record, nor the SBOMs and
// provenance, nor a mirror (served as it is), nor what lock, fetch and
// build print, as a url artifact's password does not: they are shared,
// the token is not.
func TestGitRepoCredentialsNotShown(t *testing.T) {
	needTool(t, "git")
	root := t.TempDir()
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "LICENSE"), "Apache License\nVersion 2.0, January 2004\n")
	writeFile(t, filepath.Join(work, "hack/linux/install.sh"), "#!/bin/sh\necho linux\n")
	writeFile(t, filepath.Join(work, "hack/windows/Install.ps1"), "Write-Host windows\n")
	lockGit(t, work, "init", "-q", "-b", "main")
	lockGit(t, work, "add", "-A")
	lockGit(t, work, "commit", "-q", "-m", "scripts")
	lockGit(t, work, "tag", "v1.0.0")
	lockGit(t, work, "clone", "-q", "--bare", work, filepath.Join(root, "r.git"))

	const token = "s3cretT0ken"
	repo := strings.Replace(gitSmartHTTP(t, root), "http://", "http://ci:"+token+"@", 1) + "/r.git"
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, file, strings.Replace(gitFilesRecipe, "GIT", repo, 1))

	said := mustPallet(t, "lock", "-f", file)
	out := filepath.Join(t.TempDir(), "out")
	docs := t.TempDir()
	said += mustPallet(t, "build", "-f", file, "-o", "oci:"+out, "--sbom", "--provenance", "--sbom-dir", docs)
	mirror := t.TempDir()
	said += mustPallet(t, "fetch", "-f", file, "--mirror", mirror)
	if strings.Contains(said, token) {
		t.Errorf("pallet printed the token:\n%s", said)
	}
	for _, dir := range []string{filepath.Dir(out), docs, mirror} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), token) {
				t.Errorf("%s holds the token", p)
			}
			return nil
		})
	}
}

// pallet fetch of a git path whose tag was moved (force-pushed) since
// pallet lock pinned it says so at the tag's line, as it does for a Go
// build's, not only the offline build after it.
func TestGitFilesFetchMovedTagAtLine(t *testing.T) {
	needTool(t, "git")
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "hack/linux/install.sh"), "#!/bin/sh\n")
	writeFile(t, filepath.Join(repo, "hack/windows/Install.ps1"), "Write-Host\n")
	lockGit(t, repo, "init", "-q", "-b", "main")
	lockGit(t, repo, "add", "-A")
	lockGit(t, repo, "commit", "-q", "-m", "scripts")
	lockGit(t, repo, "tag", "v1.0.0")
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, file, strings.Replace(gitFilesRecipe, "GIT", "file://"+repo, 1))
	mustPallet(t, "lock", "-f", file)
	lockGit(t, repo, "commit", "-q", "--allow-empty", "-m", "after the release")
	lockGit(t, repo, "tag", "-f", "v1.0.0")

	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	at := fmt.Sprintf("%s:%d:", file, strings.Count(string(src[:strings.Index(string(src), "tag: v{{version}}")]), "\n")+1)
	_, err = pallet(t, "fetch", "-q", "-f", file, "--mirror", t.TempDir())
	// Said once: found before only by the offline unpacking of the
	// mirror just filled, it named the artifact twice.
	if err == nil || !strings.HasPrefix(err.Error(), at) || !strings.Contains(err.Error(), "tag v1.0.0 points at") || strings.Count(err.Error(), "artifact scripts") != 1 {
		t.Errorf("fetch with the tag moved: %v; want it at %s, once", err, at)
	}
}
