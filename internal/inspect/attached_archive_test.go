package inspect

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/sbom"
)

// attestedIndex is an index of a linux/amd64 and a linux/arm64 image,
// each with an attestation manifest beside it holding an SPDX statement
// about it whose document is named for the platform, as BuildKit (and
// pallet's --attest-index) attach them; and the images, by platform.
func attestedIndex(t *testing.T) (v1.ImageIndex, map[string]v1.Image) {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[string]v1.Image{}
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		statement, err := json.Marshal(map[string]any{
			"_type":         "https://in-toto.io/Statement/v1",
			"subject":       []any{map[string]any{"name": "app", "digest": map[string]string{"sha256": d.Hex}}},
			"predicateType": sbom.PredicateSPDX,
			"predicate":     map[string]string{"spdxVersion": "SPDX-2.3", "name": "app-" + arch},
		})
		if err != nil {
			t.Fatal(err)
		}
		att, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
			Layer:       static.NewLayer(statement, sbom.MediaTypeInToto),
			Annotations: map[string]string{sbom.PredicateTypeAnnotation: sbom.PredicateSPDX},
		})
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx,
			mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}},
			mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{sbom.RefTypeAnnotation: sbom.AttestationManifest, sbom.RefDigestAnnotation: d.String()},
			}})
		images[arch] = img
	}
	return idx, images
}

// dockerSave writes, at file, the archive docker save writes since
// Docker 25 of the image idx tagged app:latest (with the containerd
// image store): an OCI layout of the index, and a manifest.json of the
// images docker load takes, here the one of arch; the blobs of the
// manifests in drop are left out, as docker save leaves out the
// platforms it has not pulled.
func dockerSave(t *testing.T, file string, idx v1.ImageIndex, img v1.Image, drop ...v1.Image) {
	t.Helper()
	dockerSaveNamed(t, file, map[string]string{refName: "app:latest", "io.containerd.image.name": "docker.io/library/app:latest"}, idx, img, drop...)
}

// dockerSaveNamed is dockerSave with the annotations of the index's
// entry in index.json: none where the image was saved by its ID.
func dockerSaveNamed(t *testing.T, file string, names map[string]string, idx v1.ImageIndex, img v1.Image, drop ...v1.Image) {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(names)); err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, im := range drop {
		m, err := im.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		left[blobName(digestOf(t, im))] = true
		left[blobName(m.Config.Digest)] = true
		for _, l := range m.Layers {
			left[blobName(l.Digest)] = true
		}
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	entry := tarball.Descriptor{Config: blobName(m.Config.Digest)}
	if len(names) > 0 {
		entry.RepoTags = []string{"app:latest"}
	}
	for _, l := range m.Layers {
		entry.Layers = append(entry.Layers, blobName(l.Digest))
	}
	mj, err := json.Marshal(tarball.Manifest{entry})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mj, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name, err := filepath.Rel(dir, p)
		if err != nil || left[filepath.ToSlash(name)] {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(name), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustPlatform(t *testing.T, s string) *platform.Platform {
	t.Helper()
	p, err := platform.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

// pallet sbom docker:FILE reads the SBOM attached to each platform's
// image of a docker archive that holds an index and its attestation
// manifests, as docker save writes one since Docker 25, where it said
// every docker archive carried none; of several platforms it names
// them and asks for one.
func TestAttachedDockerArchiveAttestations(t *testing.T) {
	ctx := context.Background()
	idx, images := attestedIndex(t)
	file := filepath.Join(t.TempDir(), "app.tar")
	dockerSave(t, file, idx, images["amd64"])
	for _, arch := range []string{"amd64", "arm64"} {
		got, err := Attached(ctx, "docker:"+file, mustPlatform(t, "linux/"+arch), "", sbom.MediaTypeSPDX)
		if err != nil {
			t.Errorf("linux/%s: %v", arch, err)
			continue
		}
		if !strings.Contains(string(got), `"name": "app-`+arch+`"`) {
			t.Errorf("linux/%s: printed %s, want the document of app-%s", arch, got, arch)
		}
	}
	_, err := Attached(ctx, "docker:"+file, nil, "", sbom.MediaTypeSPDX)
	if err == nil || !strings.Contains(err.Error(), "docker:"+file+" has 2 images (linux/amd64, linux/arm64); name one with --platform") {
		t.Errorf("no platform asked: %v", err)
	}
	_, err = Attached(ctx, "docker:"+file, mustPlatform(t, "linux/amd64"), "", sbom.MediaTypeInToto)
	if err == nil || !strings.Contains(err.Error(), "has no "+sbom.MediaTypeInToto+" attached") {
		t.Errorf("a provenance the archive does not hold: %v", err)
	}
}

// docker save of an image pulled for one platform of several keeps the
// whole index but that platform's blobs alone: the archive's image is
// that one, with no --platform, and another platform is said not to be
// in it.
func TestAttachedDockerArchiveOnePlatformHeld(t *testing.T) {
	ctx := context.Background()
	idx, images := attestedIndex(t)
	file := filepath.Join(t.TempDir(), "app.tar")
	dockerSave(t, file, idx, images["amd64"], images["arm64"])
	got, err := Attached(ctx, "docker:"+file, nil, "", sbom.MediaTypeSPDX)
	if err != nil || !strings.Contains(string(got), `"name": "app-amd64"`) {
		t.Errorf("the one platform held: %s, %v", got, err)
	}
	_, err = Attached(ctx, "docker:"+file, mustPlatform(t, "linux/arm64"), "", sbom.MediaTypeSPDX)
	if err == nil || !strings.Contains(err.Error(), "has no image for linux/arm64 (it has linux/amd64)") {
		t.Errorf("a platform not held: %v", err)
	}
}

// The docker archives pallet writes hold one platform's image and no
// attachment (docker load takes none): that is said, with where pallet
// puts them.
func TestAttachedPalletDockerArchive(t *testing.T) {
	ctx := context.Background()
	_, images := attestedIndex(t)
	file := filepath.Join(t.TempDir(), "app.tar")
	if err := (&output.DockerArchive{File: file}).Write(ctx, []output.Image{{Repository: "app", Tags: []string{"latest"}, Image: images["amd64"]}}); err != nil {
		t.Fatal(err)
	}
	_, err := Attached(ctx, "docker:"+file, nil, "", sbom.MediaTypeSPDX)
	if err == nil || !strings.Contains(err.Error(), "docker:"+file+" carries no SBOM or provenance") {
		t.Errorf("pallet's own archive: %v", err)
	}
	// Several images, and an archive of manifest.json alone (docker
	// save before 25, go-containerregistry's tarball).
	if err := (&output.DockerArchive{File: file}).Write(ctx, []output.Image{
		{Repository: "app", Tags: []string{"latest"}, Image: images["amd64"]},
		{Repository: "other", Tags: []string{"latest"}, Image: images["arm64"]},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = Attached(ctx, "docker:"+file, mustPlatform(t, "linux/arm64"), "", sbom.MediaTypeSPDX)
	if err == nil || !strings.Contains(err.Error(), "docker:"+file+" carries no SBOM or provenance") {
		t.Errorf("pallet's own archive of two images: %v", err)
	}
	if err := tarball.WriteToFile(file, mustTag(t, "app:latest"), images["amd64"]); err != nil {
		t.Fatal(err)
	}
	_, err = Attached(ctx, "docker:"+file, nil, "", sbom.MediaTypeSPDX)
	if err == nil || !strings.Contains(err.Error(), "docker:"+file+" carries no SBOM or provenance") {
		t.Errorf("an archive of manifest.json alone: %v", err)
	}
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// docker save of an image by its ID names it nowhere: its index.json
// entry has no ref.name, and its manifest.json entry no RepoTags. The
// archive's one image is read all the same, where it was said to name
// none.
func TestAttachedDockerArchiveSavedByID(t *testing.T) {
	ctx := context.Background()
	idx, images := attestedIndex(t)
	file := filepath.Join(t.TempDir(), "app.tar")
	dockerSaveNamed(t, file, nil, idx, images["amd64"], images["arm64"])
	got, err := Attached(ctx, "docker:"+file, nil, "", sbom.MediaTypeSPDX)
	if err != nil || !strings.Contains(string(got), `"name": "app-amd64"`) {
		t.Errorf("an archive of an image saved by its ID: %s, %v", got, err)
	}
}
