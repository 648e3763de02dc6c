package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// pallet sbom reads back the documents --attest-index attaches in the
// index, as BuildKit does, from a layout and a registry, each byte for
// byte the file --sbom-dir writes: it looked for OCI 1.1 referrers only,
// and said the image had none attached.
func TestSBOMReadsAttestationManifests(t *testing.T) {
	reg := testregistry.Start(t, nil)
	recipe := twoPlatformRecipe(t)
	out := filepath.Join(t.TempDir(), "out")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", recipe, "--no-cache", "--sbom", "--provenance", "--attest-index", "--sbom-dir", docs,
		"-o", "oci:"+out, "-o", "registry:"+reg.Host+"/att/app")
	files := map[string]string{"spdx-json": "sbom.spdx.json", "cyclonedx-json": "sbom.cdx.json", "provenance": "provenance.intoto.json"}
	for _, src := range []string{"oci:" + out, "oci:" + out + ":latest", reg.Host + "/att/app:latest"} {
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			for format, file := range files {
				want, err := os.ReadFile(filepath.Join(docs, "app_"+strings.ReplaceAll(p, "/", "-")+"."+file))
				if err != nil {
					t.Fatal(err)
				}
				got, err := pallet(t, "sbom", src, "--platform", p, "--format", format)
				if err != nil {
					t.Errorf("pallet sbom %s --platform %s --format %s: %v", src, p, format, err)
					continue
				}
				if got != string(want) {
					t.Errorf("pallet sbom %s --platform %s --format %s printed %.300s\nwant the file --sbom-dir wrote, %.300s", src, p, format, got, want)
				}
			}
		}
	}
}

// An index of one Windows platform rebased on several Windows versions
// (a recipe's base list) holds an image per os.version: pallet sbom
// --platform names one as windows/amd64:OSVERSION, as crane and
// containerd name it, and says so when it is not given; --platform
// windows/amd64 matched both, and nothing told them apart.
func TestSBOMOfOneWindowsVersion(t *testing.T) {
	dir := t.TempDir()
	windowsBase(t, filepath.Join(dir, "ltsc2019"), "10.0.17763.6054")
	windowsBase(t, filepath.Join(dir, "ltsc2022"), "10.0.20348.2582")
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  f: {local: {path: ./f.txt}, licenses: none}
images:
  app:
    base: {linux: scratch, windows: [oci:ltsc2019, oci:ltsc2022]}
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: f, dest: /app/}
`)
	out := filepath.Join(t.TempDir(), "out")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "--sbom=spdx", "--sbom-dir", docs, "-o", "oci:"+out)
	idx, err := layoutIndexAt(t, out, layoutIndex(t, out).Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	versions := 0
	for _, d := range idx.Manifests {
		if d.Platform == nil || d.Platform.OSVersion == "" {
			continue
		}
		versions++
		want, err := os.ReadFile(filepath.Join(docs, "app_windows-amd64_"+d.Digest.Hex[:12]+".sbom.spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		p := "windows/amd64:" + d.Platform.OSVersion
		if got := mustPallet(t, "sbom", "oci:"+out, "--platform", p); got != string(want) {
			t.Errorf("pallet sbom --platform %s printed %.200s\nwant the image %s's, %.200s", p, got, d.Digest, want)
		}
	}
	if versions != 2 {
		t.Fatalf("the index holds %d images with an os.version, want 2", versions)
	}
	_, err = pallet(t, "sbom", "oci:"+out, "--platform", "windows/amd64")
	if want := "has 2 images for windows/amd64, one per os.version (linux/amd64, windows/amd64:10.0.17763.6054, windows/amd64:10.0.20348.2582); name one with --platform windows/amd64:OSVERSION"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--platform windows/amd64: %v, want an error saying %q", err, want)
	}
	_, err = pallet(t, "sbom", "oci:"+out, "--platform", "windows/amd64:10.0.26100.1")
	if want := "has no image for windows/amd64:10.0.26100.1"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another version: %v, want an error saying %q", err, want)
	}
}

// An attestation manifest is taken at its word only where its statements
// say the same: one the index files under an image but whose statement
// is about another image (an attestation moved between indexes), or
// whose SPDX layer holds another predicate, printed that document as
// the image's SPDX SBOM.
func TestSBOMAttestationManifestChecked(t *testing.T) {
	recipe := twoPlatformRecipe(t)
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--no-cache", "--sbom", "--attest-index", "-o", "oci:"+out)
	top := layoutIndex(t, out)
	idx, err := layoutIndexAt(t, out, top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]v1.Hash{}
	atts := map[v1.Hash]int{}
	for i, d := range idx.Manifests {
		if d.Platform != nil && d.Platform.OS != "unknown" {
			images[d.Platform.Architecture] = d.Digest
		}
		if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
			h, err := v1.NewHash(d.Annotations["vnd.docker.reference.digest"])
			if err != nil {
				t.Fatal(err)
			}
			atts[h] = i
		}
	}
	amd64, arm64 := atts[images["amd64"]], atts[images["arm64"]]
	if len(atts) != 2 || amd64 == arm64 {
		t.Fatalf("the index holds attestations %v for images %v", atts, images)
	}
	// tampered writes a copy of the layout whose index files
	// attestation d under the amd64 image, or, where manifest is not
	// nil, d with manifest for its content; in place of the image's own
	// attestation, or beside it where add is set.
	tampered := func(d v1.Descriptor, manifest any, add bool) string {
		copied := filepath.Join(t.TempDir(), "out")
		if err := os.CopyFS(copied, os.DirFS(out)); err != nil {
			t.Fatal(err)
		}
		if manifest != nil {
			d.Digest, d.Size = writeBlob(t, copied, manifest)
		}
		m := *idx
		m.Manifests = slices.Clone(idx.Manifests)
		d.Annotations = m.Manifests[amd64].Annotations
		if add {
			m.Manifests = append(m.Manifests, d)
		} else {
			m.Manifests[amd64] = d
		}
		newTop := top
		newTop.Manifests = slices.Clone(top.Manifests)
		newTop.Manifests[0].Digest, newTop.Manifests[0].Size = writeBlob(t, copied, &m)
		data, err := json.Marshal(newTop)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(copied, "index.json"), string(data))
		return copied
	}
	var mf v1.Manifest
	readJSON(t, filepath.Join(out, "blobs", "sha256", idx.Manifests[amd64].Digest.Hex), &mf)
	layer := func(predicate string) v1.Descriptor {
		for _, l := range mf.Layers {
			if l.Annotations["in-toto.io/predicate-type"] == predicate {
				return l
			}
		}
		t.Fatalf("the attestation manifest has no %s layer: %+v", predicate, mf.Layers)
		return v1.Descriptor{}
	}
	// att is the amd64 attestation manifest with its SPDX layer's
	// descriptor changed by change.
	att := func(change func(*v1.Descriptor)) string {
		m := mf
		m.Layers = slices.Clone(mf.Layers)
		for i := range m.Layers {
			if m.Layers[i].Annotations["in-toto.io/predicate-type"] == sbom.PredicateSPDX {
				change(&m.Layers[i])
			}
		}
		return tampered(idx.Manifests[amd64], &m, false)
	}
	cdx := layer(sbom.PredicateCycloneDX)
	// A blob whose content is not its digest's (held before).
	rewritten := tampered(idx.Manifests[amd64], nil, false)
	writeFile(t, filepath.Join(rewritten, "blobs", "sha256", layer(sbom.PredicateSPDX).Digest.Hex), `{"_type": "https://in-toto.io/Statement/v1"}`)
	// A second attestation manifest about the amd64 image, its SPDX
	// statement another document.
	spdx := layer(sbom.PredicateSPDX)
	var st map[string]any
	readJSON(t, filepath.Join(out, "blobs", "sha256", spdx.Digest.Hex), &st)
	st["predicate"].(map[string]any)["name"] = "another"
	forged := spdx
	// Written beside the layout's blobs, which every copy takes.
	forged.Digest, forged.Size = writeBlob(t, out, st)
	second := mf
	second.Layers = []v1.Descriptor{forged}
	two := tampered(idx.Manifests[amd64], &second, true)
	// The same attestation manifest listed twice is one.
	twice := tampered(idx.Manifests[amd64], nil, true)
	if got := mustPallet(t, "sbom", "oci:"+twice, "--platform", "linux/amd64", "--format", "spdx-json"); got != mustPallet(t, "sbom", "oci:"+out, "--platform", "linux/amd64", "--format", "spdx-json") {
		t.Errorf("an attestation manifest listed twice: printed %.200s", got)
	}

	reg := testregistry.Start(t, nil)
	for i, c := range []struct {
		name, layout, want string
		push               bool
	}{
		{"the arm64 image's attestation", tampered(idx.Manifests[arm64], nil, false), "is about " + images["arm64"].String() + ", not " + images["amd64"].String(), true},
		{"a CycloneDX statement annotated SPDX", att(func(l *v1.Descriptor) { l.Digest, l.Size = cdx.Digest, cdx.Size }), "holds a statement of predicate type " + sbom.PredicateCycloneDX + ", not " + sbom.PredicateSPDX, true},
		// A registry takes no blob that is not its digest's.
		{"a rewritten blob", rewritten, "does not match its digest", false},
		{"two attestation manifests", two, "has two " + sbom.PredicateSPDX + " statements attached in its index, " + spdx.Digest.String() + " in the attestation manifest " + idx.Manifests[amd64].Digest.String() + " and " + forged.Digest.String(), true},
		{"a layer not a statement", att(func(l *v1.Descriptor) { l.MediaType = "application/json" }), "is application/json, not an in-toto statement", true},
	} {
		srcs := []string{"oci:" + c.layout}
		if c.push {
			ref := fmt.Sprintf("%s/att/tampered%d:latest", reg.Host, i)
			pushIndex(t, c.layout, ref)
			srcs = append(srcs, ref)
		}
		for _, src := range srcs {
			got, err := pallet(t, "sbom", src, "--platform", "linux/amd64", "--format", "spdx-json")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, from %s: printed %.200s, %v; want an error saying %q", c.name, src, got, err, c.want)
			}
		}
	}
}

// pushIndex pushes the index the layout dir names first to ref.
func pushIndex(t *testing.T, dir, ref string) {
	t.Helper()
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := root.ImageIndex(layoutIndex(t, dir).Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
}

// writeBlob writes v's JSON into the layout dir and returns its digest
// and size.
func writeBlob(t *testing.T, dir string, v any) (v1.Hash, int64) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := v1.SHA256(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", h.Hex), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return h, int64(len(data))
}

// twoPlatformRecipe writes a recipe of one small file on scratch for
// linux/amd64 and linux/arm64, and gives its path.
func twoPlatformRecipe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  f: {local: {path: ./f.txt}, licenses: none}
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: f, dest: /f.txt}
`)
	return recipe
}
