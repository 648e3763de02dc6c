package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// -q prints only the result on stdout, one line per image and name, as
// crane and ko do; --metadata-file writes the same facts as JSON.
func TestQuietPrintsResultAndMetadata(t *testing.T) {
	reg := testregistry.Start(t, nil)
	recipe := copyExample(t, "hello")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	meta := filepath.Join(dir, "meta.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"build", "-q", "-f", recipe, "--no-cache", "-o", "oci:" + out, "-o", "registry:" + reg.Host + "/ci/hello", "--metadata-file", meta}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("-q wrote to stderr: %s", stderr.String())
	}
	idx := layoutIndex(t, out).Manifests[0].Digest.String()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{idx, reg.Host + "/ci/hello:0.1.0@" + idx, reg.Host + "/ci/hello:latest@" + idx}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), strings.Join(want, "\n"))
	}
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m build.Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Images) != 1 || m.Images[0].Digest != idx || len(m.Images[0].Manifests) != 2 || len(m.Outputs) != 2 || m.Outputs[1].Written[0] != want[1] {
		t.Errorf("metadata:\n%s", data)
	}
	for _, mf := range m.Images[0].Manifests {
		if mf.Platform == "" || !strings.HasPrefix(mf.Digest, "sha256:") || mf.Base != "scratch" {
			t.Errorf("manifest entry %+v", mf)
		}
		// The config digest, docker's image ID, as the manifest names it.
		f, err := os.Open(filepath.Join(out, "blobs", "sha256", strings.TrimPrefix(mf.Digest, "sha256:")))
		if err != nil {
			t.Fatal(err)
		}
		man, err := v1.ParseManifest(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if mf.Config != man.Config.Digest.String() {
			t.Errorf("manifest %s: config %q, want the manifest's %s", mf.Digest, mf.Config, man.Config.Digest)
		}
	}
	rec := readRecord(t, out+".record.json")
	if len(rec.Results) != 1 || rec.Results[0].Digest != idx {
		t.Errorf("record results %+v, want the index %s", rec.Results, idx)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stdout); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stdout.String(), "pallet ") || !strings.Contains(stdout.String(), " go1.") {
			t.Errorf("%v: %q", args, stdout.String())
		}
	}
}

// --attest-index attaches an attestation manifest per platform image, as
// BuildKit lays it out; --sbom-dir writes the documents; two builds with
// caches of their own give the same bytes.
func TestSBOMAttestationManifestsReproducible(t *testing.T) {
	skopeo := needTool(t, "skopeo")
	recipe := copyExample(t, "hello")
	var digests []string
	var spdx [][]byte
	for range 2 {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", recipe, "--sbom", "--provenance", "--attest-index", "--sbom-dir", out+".sbom", "--cache-dir", t.TempDir(), "-o", "oci:"+out)
		top := layoutIndex(t, out).Manifests[0]
		digests = append(digests, top.Digest.String())
		idx, err := layoutIndexAt(t, out, top.Digest)
		if err != nil {
			t.Fatal(err)
		}
		var images, atts int
		// Each image is named once by its entry and once by an attestation.
		refs := map[string]int{}
		for _, d := range idx.Manifests {
			// Neither an image nor its attestation manifest is an
			// artifact; BuildKit names no artifactType on either.
			if d.ArtifactType != "" {
				t.Errorf("entry %s has artifactType %q", d.Digest, d.ArtifactType)
			}
			if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
				atts++
				if d.Platform == nil || d.Platform.OS != "unknown" {
					t.Errorf("attestation entry platform %+v", d.Platform)
				}
				refs[d.Annotations["vnd.docker.reference.digest"]] += 10
				continue
			}
			images++
			refs[d.Digest.String()]++
		}
		if images != 2 || atts != 2 {
			t.Errorf("%d images and %d attestation manifests, want 2 and 2", images, atts)
		}
		for d, n := range refs {
			if n != 11 {
				t.Errorf("image %s has no attestation, or an attestation names no image", d)
			}
		}
		data, err := os.ReadFile(filepath.Join(out+".sbom", "hello_linux-amd64.sbom.spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		spdx = append(spdx, data)
		if b, err := exec.Command(skopeo, "inspect", "--raw", "oci:"+out+":latest").CombinedOutput(); err != nil {
			t.Errorf("skopeo cannot read the layout with attestations: %v\n%s", err, b)
		}
	}
	if digests[0] != digests[1] || !bytes.Equal(spdx[0], spdx[1]) {
		t.Errorf("two builds differ: %v", digests)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name string `json:"name"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(spdx[0], &doc); err != nil || doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) < 2 {
		t.Errorf("SPDX document: %v %+v", err, doc)
	}
	if strings.Contains(string(spdx[0]), filepath.Dir(recipe)) {
		t.Error("the SBOM holds a path of the build machine")
	}
}

// By default SBOMs and provenance are OCI 1.1 referrers: the image and its
// index are the ones a build without them gives, and the documents are
// found from the image's digest, in a layout and through the registry's
// referrers API (or its fallback tag).
func TestSBOMReferrers(t *testing.T) {
	reg := testregistry.Start(t, nil)
	recipe := copyExample(t, "hello")
	plainOut := filepath.Join(t.TempDir(), "plain")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--no-cache", "-o", "oci:"+plainOut)
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--no-cache", "--sbom", "--provenance", "-o", "oci:"+out, "-o", "registry:"+reg.Host+"/ci/hello")
	plain := layoutIndex(t, plainOut).Manifests[0].Digest
	m := layoutIndex(t, out)
	if m.Manifests[0].Digest != plain {
		t.Errorf("attaching SBOMs changed the image: %s, without them %s", m.Manifests[0].Digest, plain)
	}
	types := map[string]bool{}
	for _, d := range m.Manifests {
		if _, tagged := d.Annotations["org.opencontainers.image.ref.name"]; tagged {
			continue
		}
		types[d.ArtifactType] = true
		data, err := os.ReadFile(filepath.Join(out, "blobs", d.Digest.Algorithm, d.Digest.Hex))
		if err != nil {
			t.Fatal(err)
		}
		var mf v1.Manifest
		if err := json.Unmarshal(data, &mf); err != nil || mf.Subject == nil || mf.Subject.Digest != plain {
			t.Errorf("referrer %s: subject %+v, want %s (%v)", d.Digest, mf.Subject, plain, err)
		}
	}
	for _, want := range []string{"application/spdx+json", "application/vnd.cyclonedx+json", "application/vnd.in-toto+json"} {
		if !types[want] {
			t.Errorf("no %s referrer in the layout (have %v)", want, types)
		}
	}
	subject, _ := name.NewDigest(reg.Host + "/ci/hello@" + plain.String())
	idx, err := remote.Referrers(subject)
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := idx.IndexManifest()
	if len(rm.Manifests) != 3 {
		t.Errorf("the registry lists %d referrers of the image, want 3", len(rm.Manifests))
	}
	// pallet inspect lists them, and pallet sbom reads them back, from the
	// layout and from the registry.
	for _, src := range []string{"oci:" + out, reg.Host + "/ci/hello:latest"} {
		if got := mustPallet(t, "inspect", src); !strings.Contains(got, "attached   application/spdx+json") || !strings.Contains(got, "application/vnd.in-toto+json") {
			t.Errorf("pallet inspect %s does not list the attachments:\n%s", src, got)
		}
	}
	for _, src := range []string{"oci:" + out + ":latest", reg.Host + "/ci/hello:latest"} {
		for format, field := range map[string]string{"spdx-json": `"spdxVersion"`, "cyclonedx-json": `"bomFormat"`, "provenance": `"predicateType"`} {
			got := mustPallet(t, "sbom", src, "--format", format)
			if !strings.Contains(got, field) {
				t.Errorf("pallet sbom %s --format %s: %.200s", src, format, got)
			}
		}
	}
}

// One layout holds every image of a recipe: when two images share a tag,
// entries are named by their full reference; a single image keeps its tags.
func TestLayoutHoldsImagesSharingATag(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "f"), "a\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  a: {local: {path: a}, licenses: none}
images:
  one:
    base: scratch
    platforms: linux/amd64
    tags: [v1]
    files: [{artifact: a, dest: /one/}]
  two:
    base: scratch
    platforms: linux/amd64
    tags: [v1]
    files: [{artifact: a, dest: /two/}]
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+out)
	var names []string
	for _, d := range layoutIndex(t, out).Manifests {
		names = append(names, d.Annotations["org.opencontainers.image.ref.name"])
	}
	if strings.Join(names, " ") != "one:v1 two:v1" {
		t.Errorf("ref names %v, want one:v1 two:v1", names)
	}
	if got := mustPallet(t, "inspect", "oci:"+out+":two:v1"); !strings.Contains(got, "two:v1") {
		t.Errorf("inspect of one entry by its full reference:\n%s", got)
	}
}

// The provenance has no timestamps unless asked for.
func TestProvenanceTimestampsOnRequest(t *testing.T) {
	recipe := copyExample(t, "hello")
	for _, withTimes := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"build", "-q", "-f", recipe, "--platform", "linux/amd64", "--no-cache", "--provenance", "--sbom-dir", dir, "-o", "oci:" + filepath.Join(dir, "out")}
		if withTimes {
			args = append(args, "--provenance-timestamps")
		}
		mustPallet(t, args...)
		data, err := os.ReadFile(filepath.Join(dir, "hello_linux-amd64.provenance.intoto.json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), "startedOn"); got != withTimes {
			t.Errorf("timestamps asked for: %v; startedOn in the provenance: %v", withTimes, got)
		}
	}
}

// An artifact's own licence files name its licence in the SBOMs: hello
// ships an MIT LICENSE; config ships none and says nothing.
func TestSBOMNamesArtifactLicence(t *testing.T) {
	recipe := copyExample(t, "hello")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--no-cache", "--sbom", "--sbom-dir", docs, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	names, _ := filepath.Glob(filepath.Join(docs, "*.spdx.json"))
	if len(names) != 1 {
		t.Fatalf("SPDX documents: %v", names)
	}
	data, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []struct {
			Name            string `json:"name"`
			LicenseDeclared string `json:"licenseDeclared"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range doc.Packages {
		got[p.Name] = p.LicenseDeclared
	}
	if got["hello"] != "MIT" || got["config"] != "NOASSERTION" {
		t.Errorf("declared licences: hello %q, config %q; want MIT and NOASSERTION (all: %v)", got["hello"], got["config"], got)
	}
}
