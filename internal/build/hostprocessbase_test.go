package build

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// The layer of the built-in host-process base is kept in the cache like
// the build's own: a second build with the cache takes it from there
// (the same blob, not written again), and the image is the same.
func TestBuiltinBaseLayerFromCache(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"app.exe": "MZ app\n",
		"pallet.yaml": `version: 1
artifacts:
  app:
    local: {path: app.exe}
    licenses: none
images:
  app:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: app, dest: /app.exe}
`,
	})
	r, err := recipe.Load(filepath.Join(dir, "pallet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(recipe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	// Each build writes another layout, so that the second is not
	// answered by the first one's note.
	build := func(out string) (digest, baseLayer string) {
		t.Helper()
		o, err := output.Parse("oci:"+filepath.Join(dir, out), output.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), p, Options{Outputs: []output.Target{o}, CacheDir: cacheDir, Progress: quietReporter(t)})
		if err != nil {
			t.Fatal(err)
		}
		if res.UpToDate || len(res.Images) != 1 {
			t.Fatalf("%s: up to date %v, %d images", out, res.UpToDate, len(res.Images))
		}
		img := res.Images[0].Image
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String(), m.Layers[0].Digest.Hex
	}
	first, base := build("out1")
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	blob := c.Blob(base)
	c.Close()
	before, err := os.Stat(blob)
	if err != nil {
		t.Fatalf("the base layer %s is not in the cache after a build: %v", base, err)
	}
	second, again := build("out2")
	if second != first || again != base {
		t.Fatalf("the second build made image %s on base layer %s; the first %s on %s", second, again, first, base)
	}
	after, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	if before.Sys().(*syscall.Stat_t).Ino != after.Sys().(*syscall.Stat_t).Ino || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the second build wrote the base layer %s again", base)
	}
}
