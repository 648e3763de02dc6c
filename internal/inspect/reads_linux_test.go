package inspect

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/pallet-dev/pallet/internal/output"
)

// readBytes is what this process has read so far, by read(2) and its
// kin, of files, pipes and sockets (/proc/self/io's rchar).
func readBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "rchar: "); ok {
			var n int64
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// A docker archive is read once: its entries' headers in one pass, then
// the JSON files it is described by, and not its layers. Each lookup of a
// file (manifest.json, then each config, then the layout's blobs) walked
// the tar again from its start, reading every header before it: for an
// archive of 40 images, fifteen times what it holds beside its layers.
func TestDockerArchiveReadOnce(t *testing.T) {
	var images []output.Image
	var layers int64
	for i := range 40 {
		img, err := random.Image(64<<10, 1)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range m.Layers {
			layers += l.Size
		}
		images = append(images, output.Image{Repository: "example.com/many", Tags: []string{fmt.Sprint(i)}, Image: img})
	}
	file := filepath.Join(t.TempDir(), "a.tar")
	if err := (&output.DockerArchive{File: file}).Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	before := readBytes(t)
	r, err := Open(context.Background(), "docker:"+file)
	read := readBytes(t) - before
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != len(images) {
		t.Fatalf("%d images, want %d", len(r.Images), len(images))
	}
	// What is not a layer is read about once: go-containerregistry reads
	// each config thrice (its size, its digest, its content), and
	// tar.Reader reads the padding after each entry.
	if rest := fi.Size() - layers; read > 2*rest {
		t.Errorf("read %d bytes of an archive of %d, %d of them beside its layers", read, fi.Size(), rest)
	}
}
