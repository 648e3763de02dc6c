package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A gomod commit the module proxy contradicts is blamed on the commit:
// line, as a wrong sum: is on its own, and the error says how to re-pin.
func TestGomodCommitMismatchAtCommitLine(t *testing.T) {
	commit := strings.Repeat("cd", 20)
	sum, _ := gomodProxyOrigin(t, commit)
	wrong := strings.Repeat("ab", 20)
	recipe := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  hello:
    gomod:
      module: `+gomodPath+`
      version: v1.0.0
      sum: `+sum+`
      commit: `+wrong+`
      packages: ./cmd/hello
      ldflags: ["-X main.commit={{commit}}"]
images:
  hello:
    base: scratch
    platforms: [linux/`+runtime.GOARCH+`]
    files:
      - {artifact: hello, dest: /usr/local/bin/}
`)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("a commit the proxy contradicts was accepted")
	}
	if want := fmt.Sprintf("pallet.yaml:%d:", 8); !strings.Contains(err.Error(), want) {
		t.Errorf("the error is not at the commit: line (%s):\n%v", want, err)
	}
	if !strings.Contains(err.Error(), "pallet lock --update") {
		t.Errorf("the error does not say how to re-pin:\n%v", err)
	}
}
