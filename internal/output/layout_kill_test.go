package output

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// TestLayoutUpdateProcess updates the layout PALLET_TEST_LAYOUT_DIR in a
// process of its own, stopping for good at PALLET_TEST_LAYOUT_STOP (before
// or after the new index.json takes the old one's place), for
// TestKilledUpdateLeavesNoStrays to kill it there.
func TestLayoutUpdateProcess(t *testing.T) {
	dir := os.Getenv("PALLET_TEST_LAYOUT_DIR")
	if dir == "" {
		t.Skip("started by TestKilledUpdateLeavesNoStrays")
	}
	stop := os.Getenv("PALLET_TEST_LAYOUT_STOP")
	renameIndex = func(from, to string) error {
		if stop == "after" {
			if err := os.Rename(from, to); err != nil {
				return err
			}
		}
		fmt.Println("stopped")
		select {}
	}
	img, err := random.Image(64<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Layout{Dir: dir}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
}

// A build killed while it updates a layout another tool also writes,
// with the new blobs moved in but not yet named (the window of flushing
// them to disk, seconds for a large layer) or with the old ones named no
// more but not yet removed, leaves blobs no entry names. The next build
// of the layout removes them, as it would have: they are pallet's, not
// another tool's blob being written, which stays.
func TestKilledUpdateLeavesNoStrays(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the killed process would keep its files open")
	}
	for _, stop := range []string{"before", "after"} {
		t.Run(stop+" the index", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shared")
			p, err := layout.Write(dir, empty.Index)
			if err != nil {
				t.Fatal(err)
			}
			other, err := random.Image(256, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AppendImage(other, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "other"})); err != nil {
				t.Fatal(err)
			}
			foreign := filepath.Join(dir, "blobs", "sha256", strings.Repeat("ab", 32))
			if err := os.WriteFile(foreign, []byte("being written by another tool"), 0o644); err != nil {
				t.Fatal(err)
			}
			write := func() {
				t.Helper()
				img, err := random.Image(64<<10, 2)
				if err != nil {
					t.Fatal(err)
				}
				if err := (&Layout{Dir: dir}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
					t.Fatal(err)
				}
			}
			write()

			cmd, _ := fixture.StartTest(t, "TestLayoutUpdateProcess", "stopped", "PALLET_TEST_LAYOUT_DIR="+dir, "PALLET_TEST_LAYOUT_STOP="+stop)
			cmd.Process.Kill()
			cmd.Wait()

			write()
			named := map[string]bool{}
			idx, err := layout.ImageIndexFromPath(dir)
			if err != nil {
				t.Fatal(err)
			}
			m, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range m.Manifests {
				named[d.Digest.Hex] = true
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := img.ConfigName()
				if err != nil {
					t.Fatal(err)
				}
				named[cfg.Hex] = true
				layers, err := img.Layers()
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range layers {
					h, err := l.Digest()
					if err != nil {
						t.Fatal(err)
					}
					named[h.Hex] = true
				}
			}
			files, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
			if err != nil {
				t.Fatal(err)
			}
			var strays []string
			for _, f := range files {
				if !named[f.Name()] && f.Name() != filepath.Base(foreign) {
					strays = append(strays, f.Name())
				}
			}
			sort.Strings(strays)
			if len(strays) > 0 {
				t.Errorf("%d blobs no entry names are left: %v", len(strays), strays)
			}
			if _, err := os.Stat(foreign); err != nil {
				t.Errorf("another tool's blob no entry names yet was removed: %v", err)
			}
			if _, err := os.Lstat(strayList(dir)); err == nil {
				t.Error("the list of strays is left beside the layout after an update that ended")
			}
			if _, err := idx.Image(mustDigest(t, other)); err != nil {
				t.Errorf("the other tool's image: %v", err)
			}
		})
	}
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
