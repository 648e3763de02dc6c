package build

import (
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// The bases of several platforms are prefetched together, each view
// read as soon as its base is resolved: under the race detector, a view
// read while later bases were still being listed raced with the listing
// (the map base looks them up in).
func TestBasesPrefetchedForSeveralPlatforms(t *testing.T) {
	dir := t.TempDir()
	var platforms []v1.Platform
	for _, arch := range []string{"amd64", "arm64", "s390x", "ppc64le", "riscv64", "386"} {
		platforms = append(platforms, v1.Platform{OS: "linux", Architecture: arch})
	}
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		l := static.NewLayer(fixture.Tar([]fixture.File{{Name: "etc/arch", Content: p.Architecture + "\n"}}), types.OCIUncompressedLayer)
		img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
			&v1.ConfigFile{OS: p.OS, Architecture: p.Architecture, RootFS: v1.RootFS{Type: "layers"}})
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	lp, err := layout.Write(filepath.Join(dir, "base"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"app": "app\n",
		"pallet.yaml": `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: oci:base
    platforms: [linux/amd64, linux/arm64, linux/s390x, linux/ppc64le, linux/riscv64, linux/386]
    files:
      - {artifact: app, dest: /usr/bin/app, mode: "0755"}
`,
	})
	buildRecipe(t, dir, quietReporter(t))
}
