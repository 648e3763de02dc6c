package build

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/platform"
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
	p := recipePlan(t, dir)
	cacheDir := t.TempDir()
	// Each build writes another layout, so that the second is not
	// answered by the first one's note.
	build := func(out string) (digest, baseLayer string) {
		t.Helper()
		res, err := Run(context.Background(), p, Options{Outputs: []output.Target{ociLayout(t, filepath.Join(dir, out))}, CacheDir: cacheDir, Progress: quietReporter(t)})
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

// A build whose cache holds the built-in base's layer writes nothing for
// it: the hives and the notice are keyed from memory, and written as
// files only to build the layer. A build with none in its cache writes
// them, and the key it stores the layer under is the one pallet stored
// it under when it hashed those files (printed by the code of commit
// e02288d), so that an entry made then is found now.
func TestBuiltinBaseLayerFromCacheWritesNothing(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	const wantKey = "53d45f8f45201d9a30257a373724fb3106f0e5505c94ad1afc3a06b6fc5c7c22"
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	windows := platform.Platform{OS: "windows", Arch: "amd64"}
	resolve := func() (work string, img v1.Image) {
		t.Helper()
		b := &builder{cache: c, work: t.TempDir()}
		r := &image.Resolver{WorkDir: b.work, Epoch: epoch, Layer: b.baseLayer}
		img, err := r.Base(context.Background(), image.HostProcessScratch, windows)
		if err != nil {
			t.Fatal(err)
		}
		b.cleanup.Wait()
		return b.work, img
	}
	written := func(dir string) []string {
		t.Helper()
		var names []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if p != dir {
				names = append(names, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	work, first := resolve()
	if len(written(work)) == 0 {
		t.Errorf("a build with an empty cache wrote no file of the base into %s", work)
	}
	ls, err := first.Layers()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := ls[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range written(filepath.Join(c.Dir(), "layers")) {
		keys = append(keys, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	if len(keys) != 1 || keys[0] != wantKey {
		t.Errorf("the base layer %s is in the cache under %q, not under %s", digest, keys, wantKey)
	}
	work, again := resolve()
	if names := written(work); len(names) != 0 {
		t.Errorf("a build taking the base layer from the cache wrote %q", names)
	}
	d1, err := first.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := again.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Errorf("the base from the cache is %s, the one written %s", d2, d1)
	}
}
