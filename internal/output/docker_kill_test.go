package output

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// stalledImage is an image whose layers send half their bytes and then
// nothing, ever: a write of it stops for good half-way.
type stalledImage struct{ v1.Image }

func (s stalledImage) Layers() ([]v1.Layer, error) {
	ls, err := s.Image.Layers()
	if err != nil {
		return nil, err
	}
	for i, l := range ls {
		ls[i] = stalledLayer{l}
	}
	return ls, nil
}

type stalledLayer struct{ v1.Layer }

func (l stalledLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	size, err := l.Size()
	if err != nil {
		return nil, err
	}
	r := io.MultiReader(io.LimitReader(rc, size/2), stall{})
	return io.NopCloser(r), nil
}

type stall struct{}

func (stall) Read([]byte) (int, error) {
	fmt.Println("stalled")
	select {}
}

// TestDockerArchiveProcess writes a docker archive of a stalled image to
// PALLET_TEST_ARCHIVE in a process of its own, for
// TestKilledArchiveWriteIsSwept to kill half-way.
func TestDockerArchiveProcess(t *testing.T) {
	file := os.Getenv("PALLET_TEST_ARCHIVE")
	if file == "" {
		t.Skip("started by TestKilledArchiveWriteIsSwept")
	}
	img, err := random.Image(1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	(&DockerArchive{File: file}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1"}, Image: stalledImage{img}}})
}

// The temporary archive of a build killed half-way through writing it is
// removed by the next build of that archive at once, as a layout's is:
// it was left for an hour, and a build killed in a loop (a CI job
// cancelled again and again) left a whole archive each time.
func TestKilledArchiveWriteIsSwept(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the killed process would keep its files open")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "app.tar")
	cmd, _ := fixture.StartTest(t, "TestDockerArchiveProcess", "stalled", "PALLET_TEST_ARCHIVE="+file)
	cmd.Process.Kill()
	cmd.Wait()
	left := func() []string {
		var names []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".app.tar.new-") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	if len(left()) == 0 {
		t.Fatal("the killed write left no temporary archive: the test stopped it too late")
	}
	if err := (&DockerArchive{File: file}).Write(context.Background(), testImages(t)); err != nil {
		t.Fatal(err)
	}
	if l := left(); len(l) > 0 {
		t.Errorf("the next write left the killed one's temporaries: %v", l)
	}
}
