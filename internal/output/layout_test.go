package output

import (
	"context"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
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
