package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// linux/amd64/v2 to v4 are built and described as such, and take the
// closest base an index offers, as containerd's matcher picks an image
// for a machine of that level: its own level, or a lower one (a plain
// amd64 base under a v3 build), never a higher one (a plain amd64 build
// does not take the v3 image, even listed first). The image's config and
// index entry say the build's level, whatever the base's.
func TestAmd64Levels(t *testing.T) {
	dir := t.TempDir()
	reg := testregistry.Start(t, nil)
	baseImage := func(variant string) (v1.Image, v1.Hash) {
		l := static.NewLayer(fixture.Tar([]fixture.File{{Name: "etc/level", Content: "amd64 " + variant + "\n"}}), types.OCIUncompressedLayer)
		img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
			&v1.ConfigFile{OS: "linux", Architecture: "amd64", Variant: variant, RootFS: v1.RootFS{Type: "layers"}})
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return img, d
	}
	plainImg, plainLayer := baseImage("")
	v3Img, v3Layer := baseImage("v3")
	// v3 listed first: go-containerregistry takes the first entry that
	// satisfies a platform, and a plain amd64 one satisfies amd64/v3.
	both := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: v3Img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64", Variant: "v3"}}},
		mutate.IndexAddendum{Add: plainImg, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	plainOnly := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: plainImg, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	for name, idx := range map[string]v1.ImageIndex{"both": both, "plain": plainOnly} {
		lp, err := layout.Write(filepath.Join(dir, name), empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := lp.AppendIndex(idx); err != nil {
			t.Fatal(err)
		}
		ref, err := nameRef(reg.Host + "/" + name + ":v1")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteIndex(ref, idx); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
args:
  BASE: oci:both
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: "{{BASE}}"
    platforms: [linux/amd64, linux/amd64/v2, linux/amd64/v3]
    files:
      - {artifact: app, dest: /usr/bin/app, mode: "0755"}
`)
	for _, tc := range []struct {
		base string
		want map[string]v1.Hash // the first layer, by the variant built
	}{
		{"oci:both", map[string]v1.Hash{"": plainLayer, "v2": plainLayer, "v3": v3Layer}},
		{reg.Host + "/both:v1", map[string]v1.Hash{"": plainLayer, "v2": plainLayer, "v3": v3Layer}},
		{"oci:plain", map[string]v1.Hash{"": plainLayer, "v2": plainLayer, "v3": plainLayer}},
		{reg.Host + "/plain:v1", map[string]v1.Hash{"": plainLayer, "v2": plainLayer, "v3": plainLayer}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--arg", "BASE="+tc.base, "-o", "oci:"+out)
		p, err := layout.FromPath(out)
		if err != nil {
			t.Fatal(err)
		}
		top, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		tm, err := top.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		idx, err := top.ImageIndex(tm.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, d := range im.Manifests {
			if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != "amd64" {
				continue
			}
			variant := d.Platform.Variant
			got[variant] = true
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Variant != variant {
				t.Errorf("base %s: linux/amd64/%s: config says variant %q", tc.base, variant, cf.Variant)
			}
			ls, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if first, _ := ls[0].Digest(); first != tc.want[variant] {
				t.Errorf("base %s: linux/amd64/%s is built on layer %s, want %s", tc.base, variant, first, tc.want[variant])
			}
		}
		if len(got) != 3 {
			t.Errorf("base %s: index lists amd64 variants %v, want \"\", v2, v3", tc.base, got)
		}
	}

	// A base only of a higher level is refused, naming it.
	lp, err := layout.Write(filepath.Join(dir, "v3only"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(v3Img); err != nil {
		t.Fatal(err)
	}
	log, err := pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--arg", "BASE=oci:v3only", "--platform", "linux/amd64/v2", "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if err == nil || !strings.Contains(log+err.Error(), "has no image for linux/amd64/v2") {
		t.Errorf("v2 build on a v3 base: %v\n%s", err, log)
	}
}

func nameRef(s string) (name.Reference, error) { return name.ParseReference(s) }

// A go build whose env raises GOAMD64 above its platform's level makes
// binaries that stop at start on machines the image says it runs on: the
// build warns at the artifact's line, and not when the platform names
// the level (nor on arm64, where Go ignores GOAMD64).
func TestGOAMD64AboveThePlatformWarned(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app/go.mod"), "module example.com/app\n\ngo 1.21\n")
	writeFile(t, filepath.Join(dir, "app/main.go"), "package main\n\nfunc main() {}\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	for _, tc := range []struct {
		platforms string
		warned    bool
	}{
		{"[linux/amd64, linux/arm64]", true},
		{"[linux/amd64/v3, linux/arm64]", false},
		{"[linux/amd64/v4]", false},
	} {
		writeFile(t, recipe, `version: 1
artifacts:
  app:
    go: {module: app, packages: ., env: [GOAMD64=v3]}
    licenses: none
images:
  app:
    base: scratch
    platforms: `+tc.platforms+`
    files:
      - {artifact: app, dest: /}
`)
		log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		warning := recipe + ":4:5: artifact app (linux/amd64, go mode): its env sets GOAMD64=v3, so its binaries stop at start on an amd64 machine below v3"
		if got := strings.Contains(log, warning); got != tc.warned {
			t.Errorf("platforms %s: warned %v, want %v:\n%s", tc.platforms, got, tc.warned, log)
		}
		if strings.Contains(log, "sets GOAMD64") && !tc.warned {
			t.Errorf("platforms %s: a warning of GOAMD64:\n%s", tc.platforms, log)
		}
	}
}

// pallet sbom --platform linux/amd64/v3 of an image built for linux/amd64
// and linux/amd64/v3 is the v3 image's document, though a v3 machine runs
// both images: the closest, not "2 images for the platform asked".
func TestSBOMOfAnAmd64Level(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/amd64/v3]
    files:
      - {artifact: app, dest: /usr/bin/app, mode: "0755"}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--sbom", "-o", "oci:"+out)
	for _, p := range []string{"linux/amd64", "linux/amd64/v3"} {
		doc := mustPallet(t, "sbom", "--platform", p, "oci:"+out)
		if want := `"name": "app (` + p + `)"`; !strings.Contains(doc, want) {
			t.Errorf("sbom --platform %s: no %s in\n%.400s", p, want, doc)
		}
	}
}
