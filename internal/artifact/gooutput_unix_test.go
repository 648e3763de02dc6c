//go:build unix

package artifact

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/platform"
)

// A go build that fails after printing without end (-gcflags=-m prints a
// line per compiler decision) is quoted by its beginning and its end,
// within bounds, where the whole of it was held in memory and put into
// the error.
func TestGoBuildFailureQuotedWithinBounds(t *testing.T) {
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip(err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = build ]; then\n  echo 'the first complaint' >&2\n  head -c 20000000 /dev/zero | tr '\\0' 'x' >&2\n  echo >&2\n  echo 'the last complaint' >&2\n  exit 1\nfi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	mod := t.TempDir()
	for name, data := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := platform.Parse(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	g := &Go{Module: mod, Packages: []string{"."}}
	r := &Request{Name: "m", Platform: p, Kind: g}
	_, err = g.Produce(t.Context(), &Fetcher{ModCache: t.TempDir()}, r, filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("the build that failed gave no error")
	}
	msg := err.Error()
	if len(msg) > 1<<20 || !strings.Contains(msg, "the first complaint") || !strings.Contains(msg, "the last complaint") || !strings.Contains(msg, "bytes left out") {
		t.Fatalf("error of %d bytes (want under 1 MiB, with the first and last complaints and what was left out): %.300s ... %.300s", len(msg), msg, msg[max(0, len(msg)-300):])
	}
}
