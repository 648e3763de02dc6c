package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestModuleLicencesStoppedIsCanceled stops a build while an artifact's
// module licences are being fetched, because another artifact failed:
// the step is said to be canceled, as an artifact stopped so is, not to
// have failed with what its killed go command said ("signal: killed"),
// which reads as a second failure of its own.
func TestModuleLicencesStoppedIsCanceled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	dir := t.TempDir()
	// A Go program linking a module of the fixture proxy, built with a
	// module cache of its own: the build's has to fetch the module for
	// its licence.
	gomodProxy(t)
	bin := filepath.Join(dir, "bin")
	install := exec.Command("go", "install", gomodPath+"/cmd/hello@v1.0.0")
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOMODCACHE="+t.TempDir(), "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	// The proxy, from now on, holds the module's requests until the
	// build is stopped; the other artifact's download fails once the
	// module licences step has asked.
	asked := make(chan struct{})
	var once sync.Once
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked) })
		<-r.Context().Done()
	}))
	t.Cleanup(proxy.Close)
	t.Setenv("GOPROXY", proxy.URL)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-asked
		http.NotFound(w, r)
	}))
	t.Cleanup(broken.Close)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  a-tool:
    local:
      path: bin/hello
    licenses: none
  b-broken:
    url:
      url: `+broken.URL+`/gone
      sha256: `+strings.Repeat("0", 64)+`
images:
  tools:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: a-tool, dest: /bin/}
      - {artifact: b-broken, dest: /opt/}
`)
	out, err := pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", t.TempDir(), "--progress", "plain", "--jobs", "2", "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "b-broken") {
		t.Fatalf("build: %v, want b-broken's failure\n%s", err, out)
	}
	if strings.Contains(err.Error(), "a-tool") {
		t.Errorf("the build's error blames a-tool, which was stopped: %v", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "module licences a-tool") && !strings.HasPrefix(line, "start") && !strings.HasPrefix(line, "canceled") {
			t.Errorf("the stopped step is said as %q, want canceled\n%s", line, out)
		}
	}
	if !strings.Contains(out, "canceled module licences a-tool") {
		t.Errorf("no canceled module licences step\n%s", out)
	}
}
