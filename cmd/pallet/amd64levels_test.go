package main

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
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
		got := map[string]bool{}
		for plat, img := range imagesByPlatform(t, out) {
			variant, ok := strings.CutPrefix(plat, "linux/amd64")
			if !ok {
				continue
			}
			variant = strings.TrimPrefix(variant, "/")
			got[variant] = true
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
		warning := recipe + ":4:5: artifact app (linux/amd64, go): its env sets GOAMD64=v3, so its binaries stop at start on an amd64 machine below v3"
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

// What a recipe keys by linux/amd64 (a download's pin, a placement's
// platforms, a config section) serves the x86-64 levels too, unless the
// level is keyed itself; --platform linux/amd64 names that platform
// alone, not the recipe's levels.
func TestAmd64KeysServeLevels(t *testing.T) {
	dir := t.TempDir()
	bin := "an amd64 release binary\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, bin) }))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256([]byte(bin))
	writeFile(t, filepath.Join(dir, "v3.txt"), "for v3 alone\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, fmt.Sprintf(`version: 1
artifacts:
  tool:
    url:
      url: %s/tool-{{arch}}
      sha256: {linux/amd64: %x, linux/arm64: %s}
    licenses: none
  v3:
    local: {path: v3.txt}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/amd64/v3, linux/arm64]
    config:
      for:
        linux/amd64: {env: [LEVEL=any]}
        linux/amd64/v3: {env: [LEVEL=v3]}
    files:
      - {artifact: tool, dest: /tool, platforms: [linux/amd64]}
      - {artifact: v3, dest: /v3.txt, platforms: [linux/amd64/v3]}
`, srv.URL, sum, strings.Repeat("0", 64)))
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--platform", "linux/amd64/v3", "-o", "oci:"+out)
	files := map[string][]string{}
	env := map[string][]string{}
	for plat, img := range imagesByPlatform(t, out) {
		variant := strings.TrimPrefix(strings.TrimPrefix(plat, "linux/amd64"), "/")
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		env[variant] = cf.Config.Env
		rc := mutate.Extract(img)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Typeflag == tar.TypeReg {
				files[variant] = append(files[variant], h.Name)
			}
		}
		rc.Close()
		slices.Sort(files[variant])
	}
	if fmt.Sprint(files) != "map[:[tool] v3:[tool v3.txt]]" {
		t.Errorf("files by level: %v, want the pinned tool in both and v3.txt in v3 alone", files)
	}
	if !slices.Contains(env[""], "LEVEL=any") || !slices.Contains(env["v3"], "LEVEL=v3") {
		t.Errorf("config env by level: %v", env)
	}
	// --platform linux/amd64 builds that one image of the three.
	one := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "-o", "oci:"+one)
	if got := imagesByPlatform(t, one); len(got) != 1 || got["linux/amd64"] == nil {
		t.Errorf("--platform linux/amd64 built %v, want linux/amd64 alone", slices.Sorted(maps.Keys(got)))
	}
}

// imagesByPlatform are the images of the one image index in the layout at
// dir, by platform ("linux/amd64/v3").
func imagesByPlatform(t *testing.T, dir string) map[string]v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
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
	// A single image stands in index.json itself; several in an index
	// it names.
	idx, im := top, tm
	if tm.Manifests[0].MediaType.IsIndex() {
		if idx, err = top.ImageIndex(tm.Manifests[0].Digest); err != nil {
			t.Fatal(err)
		}
		if im, err = idx.IndexManifest(); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" {
			continue // an attestation
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Platform.String()] = img
	}
	return out
}
