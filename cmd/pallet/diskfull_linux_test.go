package main

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A layer the cache's disk cannot take is said at the layer's line, as
// the layer's other errors are: the message named the temporary file and
// no place in the recipe.
func TestLayerOnFullDiskNamesItsLine(t *testing.T) {
	cacheDir := t.TempDir()
	if err := unix.Mount("tmpfs", cacheDir, "tmpfs", 0, "size=8m"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mounting needs root")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(cacheDir, unix.MNT_DETACH) })
	dir := t.TempDir()
	// 24 MiB that gzip cannot shrink into 8.
	data := make([]byte, 24<<20)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(data)
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in", "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  big:
    local: {path: in}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: big
        dest: /data/
`)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", cacheDir, "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.HasPrefix(err.Error(), recipe+":11: image app (linux/amd64), layer ") || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("got %v, want the layer's line and no space left", err)
	}
}
