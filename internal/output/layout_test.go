package output

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// A single-platform image's entry carries its platform, and no
// artifactType, so that readers can tell it from its attachments.
func TestLayoutEntryNamesPlatform(t *testing.T) {
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture, cf.OSVersion = "windows", "amd64", "10.0.17763.1"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := (&Layout{Dir: dir}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1"}
	if len(m.Manifests) != 1 || m.Manifests[0].Platform == nil || !m.Manifests[0].Platform.Equals(want) || m.Manifests[0].ArtifactType != "" {
		t.Errorf("entry %+v, want platform %+v and no artifactType", m.Manifests, want)
	}
}

// A layout other tools also write to keeps their entries, and the blobs
// those need: pallet replaces its own entries (marked), the tags it
// writes, and their attachments; it removes only the blobs of what it
// replaced, never one no entry named (another tool may be writing it).
func TestLayoutKeepsOtherToolsEntries(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shared")
	rnd := func() v1.Image {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	// Another tool's layout: "other" and "v1" tagged, and an attachment
	// of "v1" (untagged, with a subject).
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	other, theirV1 := rnd(), rnd()
	v1d, err := partial.Descriptor(theirV1)
	if err != nil {
		t.Fatal(err)
	}
	sbom := mutate.Subject(rnd(), *v1d).(v1.Image)
	for img, ref := range map[v1.Image]string{other: "other", theirV1: "v1"} {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AppendImage(sbom); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "blobs", "sha256", strings.Repeat("ab", 32))
	if err := os.WriteFile(orphan, []byte("being written by another tool"), 0o644); err != nil {
		t.Fatal(err)
	}

	write := func(img v1.Image, tags ...string) {
		t.Helper()
		if err := (&Layout{Dir: dir}).Write(ctx, []Image{{Repository: "app", Tags: tags, Image: img}}); err != nil {
			t.Fatal(err)
		}
	}
	ours1, ours2 := rnd(), rnd()
	write(ours1, "v1", "v2")
	write(ours2, "v3") // pallet's v1 and v2 go: they are its own

	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Annotations["org.opencontainers.image.ref.name"]+"="+d.Digest.Hex[:8])
	}
	od, _ := other.Digest()
	o2, _ := ours2.Digest()
	want := []string{"other=" + od.Hex[:8], "v3=" + o2.Hex[:8]}
	if !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	// Every entry is whole; the replaced ones' blobs are gone.
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err == nil {
			err = validate.Image(img)
		}
		if err != nil {
			t.Errorf("%s: %v", d.Annotations["org.opencontainers.image.ref.name"], err)
		}
	}
	for _, img := range []v1.Image{theirV1, sbom, ours1} {
		d, _ := img.Digest()
		if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", d.Hex)); err == nil {
			t.Errorf("manifest %s of a replaced entry is still there", d)
		}
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("a blob no entry named was removed: %v", err)
	}
}
