package build

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Annotations BuildKit writes on attestation manifests and their layers,
// which registries, docker buildx imagetools and scanners read.
const (
	refTypeAnnotation   = "vnd.docker.reference.type"
	refDigestAnnotation = "vnd.docker.reference.digest"
	attestationManifest = "attestation-manifest"
	predicateAnnotation = "in-toto.io/predicate-type"
)

// describeArtifacts makes the SBOM's view of every artifact, once per
// build: file SHA-1s and Go modules, through the memo.
func (b *builder) describeArtifacts() error {
	b.described = nil
	for _, key := range b.plan.Keys() {
		res := b.results[key]
		var rec *record.Artifact
		for i := range b.record.Artifacts {
			a := &b.record.Artifacts[i]
			if a.Name == res.Record.Name && a.Platform == res.Record.Platform {
				rec = a
			}
		}
		if rec == nil {
			continue
		}
		d, err := sbom.Describe(*rec, res, b.memo)
		if err != nil {
			return err
		}
		b.described = append(b.described, d)
	}
	return nil
}

// attest makes img's attestation manifest: its SPDX and CycloneDX SBOMs
// and its provenance, each an in-toto statement about img, as BuildKit
// lays them out; and keeps the documents for writing beside the record.
func (b *builder) attest(im *plan.Image, pi *plan.PlatformImage, ref string, base, img v1.Image, ir *record.Image) (v1.Image, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	in := sbom.Input{
		Image: im.Name, Repository: im.Repository, Platform: pi.Platform.String(), Digest: d.String(),
		Base: sbom.Base{Ref: ref}, Epoch: b.plan.Epoch, Recipe: b.recipeFile, Dir: b.plan.Dir,
		Args: b.opt.Args, Artifacts: b.described, Placed: ir.Placed,
		Builder: sbom.Builder{ID: sbom.DefaultBuilderID, Version: palletVersion()},
	}
	for _, p := range im.Platforms {
		in.Platforms = append(in.Platforms, p.Platform.String())
	}
	if bd, err := base.Digest(); err == nil && ref != "scratch" {
		in.Base.Digest = bd.String()
	}
	docs, err := sbom.All(in)
	if err != nil {
		return nil, err
	}
	att := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	att = mutate.ConfigMediaType(att, types.OCIConfigJSON)
	if att, err = mutate.ConfigFile(att, &v1.ConfigFile{OS: "unknown", Architecture: "unknown", RootFS: v1.RootFS{Type: "layers"}}); err != nil {
		return nil, err
	}
	stem := strings.NewReplacer("/", "-").Replace(im.Name + "_" + pi.Platform.String())
	if len(pi.Bases) > 1 {
		stem += "_" + d.Hex[:12]
	}
	for _, doc := range docs {
		data := doc.Data
		if doc.PredicateType != sbom.PredicateProvenance {
			if data, err = sbom.Statement(in, doc.PredicateType, doc.Data); err != nil {
				return nil, err
			}
		}
		att, err = mutate.Append(att, mutate.Addendum{
			Layer:       static.NewLayer(data, sbom.MediaTypeInToto),
			Annotations: map[string]string{predicateAnnotation: doc.PredicateType},
		})
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.documents[stem+"."+doc.Name] = doc.Data
		b.mu.Unlock()
	}
	return att, nil
}

// withAttestations adds each image's attestation manifest to idx, as an
// entry of platform unknown/unknown that names the image it is about:
// runtimes skip it, and it cannot be taken for a runnable platform.
func withAttestations(idx v1.ImageIndex, imgs, atts []v1.Image) (v1.ImageIndex, error) {
	if len(atts) == 0 {
		return idx, nil
	}
	adds := make([]mutate.IndexAddendum, 0, len(atts))
	for i, att := range atts {
		d, err := imgs[i].Digest()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
			MediaType:   types.OCIManifestSchema1,
			Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{refTypeAnnotation: attestationManifest, refDigestAnnotation: d.String()},
		}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// writeDocuments writes the SBOMs and provenances into dir, replacing
// what an earlier build wrote there.
func writeDocuments(dir string, docs map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		if err := tempfile.WriteFile(filepath.Join(dir, name), docs[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// DocumentsDir is where the SBOMs and provenances of a build writing its
// record at recordPath go: a directory beside it.
func DocumentsDir(recordPath string) string {
	return strings.TrimSuffix(strings.TrimSuffix(recordPath, ".json"), ".record") + ".sbom"
}

// palletVersion is this binary's module version, for the provenance.
func palletVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
