package output

import (
	"archive/tar"
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
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
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

// The archive is also an OCI layout, as docker save writes since Docker
// 25: containerd's import and docker load read index.json when there is
// one, and keep the manifest pallet built, and its digest, where from
// manifest.json alone they make up a docker manifest with another digest.
// Each tag is one entry, named in full for containerd.
func TestDockerArchiveIsOCILayout(t *testing.T) {
	a, err := random.Image(512, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []*v1.Image{&a, &b} {
		cf, err := (*img).ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf.OS, cf.Architecture = "linux", "amd64"
		if *img, err = mutate.ConfigFile(*img, cf); err != nil {
			t.Fatal(err)
		}
	}
	f := filepath.Join(t.TempDir(), "out.tar")
	images := []Image{
		{Repository: "app", Tags: []string{"v1", "latest"}, Image: a},
		{Repository: "ghcr.io/org/tool", Tags: []string{"2"}, Image: b},
	}
	if err := (&DockerArchive{File: f}).Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatalf("%s: %v (its directory comes first in the archive)", h.Name, err)
		}
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range layoutEntries(t, dir) {
		got = append(got, e.Digest.String()+" "+e.Annotations[refNameKey]+" "+e.Annotations["io.containerd.image.name"]+" "+e.Platform.String())
		img, err := lp.Image(e.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("entry %s: %v", e.Digest, err)
		}
	}
	ad, _ := a.Digest()
	bd, _ := b.Digest()
	want := []string{
		ad.String() + " v1 docker.io/library/app:v1 linux/amd64",
		ad.String() + " latest docker.io/library/app:latest linux/amd64",
		bd.String() + " 2 ghcr.io/org/tool:2 linux/amd64",
	}
	if !slices.Equal(got, want) {
		t.Errorf("index.json entries\n%q\nwant\n%q", got, want)
	}
	// manifest.json names the layout's blobs: one copy of each.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(f) })
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m {
		for _, p := range append([]string{d.Config}, d.Layers...) {
			if !strings.HasPrefix(p, "blobs/sha256/") {
				t.Errorf("manifest.json names %s, not a blob of the layout", p)
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
