package build

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Attest says which documents to make about every platform image, and
// how to attach them.
type Attest struct {
	SPDX, CycloneDX, Provenance bool
	// Index attaches them as BuildKit does, an attestation manifest per
	// image in the image's index (platform unknown/unknown); by default
	// they are OCI 1.1 referrers, which leave the image and its index as
	// they are, so no old runtime can mistake them for a platform.
	Index bool
	// Dir, when set, also receives them as files.
	Dir string
	// Timestamps puts the build's start and end in the provenance, which
	// then differs from build to build.
	Timestamps bool
}

func (a Attest) any() bool { return a.SPDX || a.CycloneDX || a.Provenance }

func (a Attest) wants(d sbom.Document) bool {
	switch d.PredicateType {
	case sbom.PredicateSPDX:
		return a.SPDX
	case sbom.PredicateCycloneDX:
		return a.CycloneDX
	case sbom.PredicateProvenance:
		return a.Provenance
	}
	return false
}

// attest makes the documents about img and attaches them: as referrers
// (returned) or in an attestation manifest (returned as att).
func (b *builder) attest(ctx context.Context, im *plan.Image, pi *plan.PlatformImage, ref string, base, img v1.Image, ir *record.Image) (att v1.Image, referrers []v1.Image, err error) {
	d, err := img.Digest()
	if err != nil {
		return nil, nil, err
	}
	// An image's documents describe every artifact of the build, as its
	// provenance names them all.
	described, err := b.describedAll(ctx)
	if err != nil {
		return nil, nil, err
	}
	in := sbom.Input{
		Image: im.Name, Repository: im.Repository, Platform: pi.Platform.String(), Digest: d.String(),
		Base: sbom.Base{Ref: ref}, Epoch: b.plan.Epoch, Recipe: b.recipeFile, Dir: b.plan.Dir,
		Args: b.opt.Args, Artifacts: described, Placed: ir.Placed,
		Builder: sbom.Builder{ID: sbom.DefaultBuilderID, Version: palletVersion()},
	}
	for _, p := range im.Platforms {
		in.Platforms = append(in.Platforms, p.Platform.String())
	}
	if b.opt.Attest.Timestamps {
		in.StartedOn, in.FinishedOn = b.started, time.Now()
	}
	if bd, err := base.Digest(); err == nil && ref != "scratch" {
		in.Base.Digest = bd.String()
	}
	all, err := sbom.All(in)
	if err != nil {
		return nil, nil, err
	}
	var docs []sbom.Document
	for _, doc := range all {
		if b.opt.Attest.wants(doc) {
			docs = append(docs, doc)
		}
	}
	stem := documentStem(im, pi)
	if len(pi.Bases) > 1 {
		stem += "_" + d.Hex[:12]
	}
	b.mu.Lock()
	for _, doc := range docs {
		b.documents[stem+"."+doc.Name] = doc.Data
	}
	b.mu.Unlock()
	if !b.opt.Attest.Index {
		subject, err := partial.Descriptor(img)
		if err != nil {
			return nil, nil, err
		}
		created := map[string]string{"org.opencontainers.image.created": b.plan.Epoch.UTC().Format(time.RFC3339)}
		for _, doc := range docs {
			var layerAnn map[string]string
			if doc.MediaType == sbom.MediaTypeInToto {
				layerAnn = map[string]string{sbom.PredicateTypeAnnotation: doc.PredicateType}
			}
			r, err := image.Referrer(*subject, doc.MediaType, doc.Data, created, layerAnn)
			if err != nil {
				return nil, nil, err
			}
			referrers = append(referrers, r)
		}
		return nil, referrers, nil
	}
	att = mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	att = mutate.ConfigMediaType(att, types.OCIConfigJSON)
	if att, err = mutate.ConfigFile(att, &v1.ConfigFile{OS: "unknown", Architecture: "unknown", RootFS: v1.RootFS{Type: "layers"}}); err != nil {
		return nil, nil, err
	}
	for _, doc := range docs {
		data := doc.Data
		if doc.PredicateType != sbom.PredicateProvenance {
			if data, err = sbom.Statement(in, doc.PredicateType, doc.Data); err != nil {
				return nil, nil, err
			}
		}
		att, err = mutate.Append(att, mutate.Addendum{
			Layer:       static.NewLayer(data, sbom.MediaTypeInToto),
			Annotations: map[string]string{sbom.PredicateTypeAnnotation: doc.PredicateType},
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return att, nil, nil
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
		adds = append(adds, mutate.IndexAddendum{Add: image.NotArtifact(att), Descriptor: v1.Descriptor{
			MediaType:   types.OCIManifestSchema1,
			Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{sbom.RefTypeAnnotation: sbom.AttestationManifest, sbom.RefDigestAnnotation: d.String()},
		}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// writeDocuments writes the SBOMs and provenances into dir, replacing
// what an earlier build wrote there.
// documentStem begins the names of an image's documents for one platform
// in --sbom-dir (one per base follows, with the manifest's digest).
func documentStem(im *plan.Image, pi *plan.PlatformImage) string {
	return strings.NewReplacer("/", "-").Replace(im.Name + "_" + pi.Platform.String())
}

// documentKinds are the top-level keys of the documents --sbom-dir holds
// (SPDX, CycloneDX, in-toto): only such a file there is replaced.
var documentKinds = [][]string{{"spdxVersion"}, {"bomFormat"}, {"_type"}}

// checkDocuments refuses, before any work, a --sbom-dir whose files with
// the names this build's documents take are not earlier documents.
func checkDocuments(dir string, p *plan.Plan) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // missing: made when written; unreadable: said then
	}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			stem := documentStem(im, pi)
			for _, e := range ents {
				if n := e.Name(); strings.HasPrefix(n, stem+".") || strings.HasPrefix(n, stem+"_") {
					if err := output.CheckOwnJSON(filepath.Join(dir, n), "--sbom-dir", documentKinds...); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func writeDocuments(dir string, docs map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		// The directory is the user's: only an earlier build's document
		// is replaced.
		if err := output.CheckOwnJSON(filepath.Join(dir, name), "--sbom-dir", documentKinds...); err != nil {
			return err
		}
		tempfile.SweepBeside(filepath.Join(dir, name))
		if err := tempfile.WriteFile(filepath.Join(dir, name), docs[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// palletVersion is this binary's module version, for the provenance.
func palletVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
