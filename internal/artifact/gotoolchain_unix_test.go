//go:build unix

package artifact_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// A toolchain zip that is a named pipe, in the proxy or in the module
// cache, is refused at once, naming it, where opening it would wait for a
// writer forever.
func TestVerifyGoToolchainZipPipe(t *testing.T) {
	const gv = "go1.99.1"
	v := toolchainVersion(gv)
	for _, where := range []string{"proxy", "module cache"} {
		t.Run(where, func(t *testing.T) {
			p := newToolchainProxy(t, gv)
			p.fetch(t, gv)
			t.Setenv("GOSUMDB", p.vkey)
			modcache := t.TempDir()
			pipe := filepath.Join(p.dir, "golang.org", "toolchain", "@v", v+".zip")
			if where == "module cache" {
				pipe = filepath.Join(modcache, "cache", "download", "golang.org", "toolchain", "@v", v+".zip")
				if err := os.MkdirAll(filepath.Dir(pipe), 0o755); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(pipe); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(pipe, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := artifact.VerifyGoToolchain(context.Background(), t.TempDir(), offlineEnv(gv, p.dir, modcache))
			if err == nil || !strings.Contains(err.Error(), pipe+" is not a regular file") {
				t.Errorf("want a refusal naming %s, got %v", pipe, err)
			}
		})
	}
}
