package main

import (
	"crypto/sha256"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A Linux program placed with no execute bit, as a release binary
// downloaded as it is comes (0644), builds with a warning at its
// placement's line: kind-base's release mode shipped runc so, and no
// runtime starts it. Given a mode, or a shared library, or on Windows,
// nothing is said.
func TestProgramWithoutExecuteBitWarned(t *testing.T) {
	bin := string(fixture.ELF(elf.EM_X86_64, "runc release stand-in\n"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, bin) }))
	defer srv.Close()
	sum := sha256.Sum256([]byte(bin))
	// A shared library: ET_DYN without a loader.
	lib := []byte(bin)
	lib[16] = byte(elf.ET_DYN)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "libfoo.so.1"), string(lib))
	recipe := filepath.Join(dir, "pallet.yaml")
	build := func(mode string) string {
		writeFile(t, recipe, fmt.Sprintf(`version: 1
artifacts:
  runc:
    url: {url: %s/runc.amd64, sha256: %x}
    licenses: none
  lib:
    local: {path: ./libfoo.so.1}
    licenses: none
images:
  node:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: lib, dest: /usr/lib/}
      - {artifact: runc, dest: /usr/local/sbin/runc%s}
`, srv.URL, sum, mode))
		return mustPallet(t, "build", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	}
	out := build("")
	want := "pallet.yaml:15:9: image node (linux/amd64): /usr/local/sbin/runc is a program (ELF) placed with no execute bit (mode 0644)"
	if !strings.Contains(out, want) {
		t.Errorf("no warning of runc placed 0644; want %q in:\n%s", want, out)
	}
	if strings.Contains(out, "libfoo") {
		t.Errorf("a shared library placed 0644 was warned of:\n%s", out)
	}
	if out := build(`, mode: "0755"`); strings.Contains(out, "execute bit") {
		t.Errorf("warned with mode 0755:\n%s", out)
	}
}
