package output

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The same images give the same archive bytes every time, with the tags in
// the order they were given: ggcr's writer orders them by map iteration.
func TestDockerArchiveDeterministic(t *testing.T) {
	a, err := random.Image(512, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	tags := []string{"v1", "latest", "stable", "a", "z", "m"}
	images := []Image{
		{Repository: "example.com/b", Tags: tags, Image: b},
		{Repository: "example.com/a", Tags: []string{"1"}, Image: a},
		{Repository: "example.com/b-alias", Tags: []string{"x"}, Image: b},
	}
	dir := t.TempDir()
	var first []byte
	for i := range 8 {
		f := filepath.Join(dir, "out.tar")
		if err := (&DockerArchive{File: f}).Write(context.Background(), images); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
		} else if !bytes.Equal(first, got) {
			t.Fatalf("write %d differs from the first", i)
		}
	}
	f := filepath.Join(dir, "out.tar")
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(f) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Fatalf("manifest has %d entries, want 2 (b and its alias share one): %+v", len(m), m)
	}
	want := []string{"example.com/b:v1", "example.com/b:latest", "example.com/b:stable", "example.com/b:a", "example.com/b:z", "example.com/b:m", "example.com/b-alias:x"}
	if !slices.Equal(m[0].RepoTags, want) {
		t.Errorf("tags %v, want %v", m[0].RepoTags, want)
	}
	// Each image reads back whole, by each of its names.
	for _, tc := range []struct {
		ref string
		img v1.Image
	}{{"example.com/b:stable", b}, {"example.com/b-alias:x", b}, {"example.com/a:1", a}} {
		tag, _ := name.NewTag(tc.ref)
		got, err := tarball.ImageFromPath(f, &tag)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		gl, _ := got.Layers()
		wl, _ := tc.img.Layers()
		if len(gl) != len(wl) {
			t.Fatalf("%s: %d layers, want %d", tc.ref, len(gl), len(wl))
		}
		for i := range gl {
			gd, _ := gl[i].Digest()
			wd, _ := wl[i].Digest()
			if gd != wd {
				t.Errorf("%s layer %d: %s, want %s", tc.ref, i, gd, wd)
			}
		}
	}
}

// foreignLayer stands for a Windows base layer that lives only at its URL;
// reading it fails, so a writer that fetched it would fail the test.
type foreignLayer struct{ v1.Layer }

func (foreignLayer) MediaType() (types.MediaType, error) { return types.DockerForeignLayer, nil }
func (foreignLayer) Compressed() (io.ReadCloser, error) {
	return nil, errors.New("a foreign layer was fetched")
}

// An image with a foreign layer is refused with the reason: docker load
// cannot load an archive that does not carry the layer unless the host
// has it already.
func TestDockerArchiveForeignLayer(t *testing.T) {
	l, err := random.Layer(100, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.Append(mutate.MediaType(mustEmptyImage(t), types.DockerManifestSchema2), mutate.Addendum{
		Layer:     foreignLayer{l},
		URLs:      []string{"https://mcr.example/layer"},
		MediaType: types.DockerForeignLayer,
	})
	if err != nil {
		t.Fatal(err)
	}
	own, err := random.Layer(100, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, own)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "win.tar")
	err = (&DockerArchive{File: f}).Write(context.Background(), []Image{{Repository: "win", Tags: []string{"1"}, Image: img}})
	fd, _ := l.Digest()
	if err == nil || !strings.Contains(err.Error(), "foreign (non-distributable) layer "+fd.String()) || !strings.Contains(err.Error(), "https://mcr.example/layer") {
		t.Fatalf("an archive that docker load may not load: %v", err)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Errorf("an archive was left at %s: %v", f, err)
	}
}

func mustEmptyImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
