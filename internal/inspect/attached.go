package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/sbom"
)

// Attached reads the document of media type want (sbom.MediaTypeSPDX,
// sbom.MediaTypeCycloneDX or sbom.MediaTypeInToto) attached to the image at spec,
// a location as inspect reads one, so that a reference named for inspect
// names the same image here. The document is an OCI 1.1 referrer of the
// image, or an attestation manifest in its index (--attest-index), in a
// registry, a layout, or a docker archive that is also a layout (docker
// save's since Docker 25; pallet's hold no attachment). Of an index, p (and osVersion, for an index holding an image per Windows
// version) chooses the image; nil p takes the only one. Registry requests
// are held to ctx.
func Attached(ctx context.Context, spec string, p *platform.Platform, osVersion, want string) ([]byte, error) {
	if _, ok := predicateOf[want]; !ok {
		return nil, fmt.Errorf("no attached document has media type %q", want)
	}
	loc, err := ParseLocation(spec)
	if err != nil {
		return nil, err
	}
	switch loc.Kind {
	case Layout:
		return layoutReferrer(loc.Path, loc.Ref, p, osVersion, want)
	case Archive:
		return archiveReferrer(ctx, loc.Path, p, osVersion, want)
	default:
		return registryReferrer(ctx, loc.Ref, p, osVersion, want)
	}
}

// pick chooses the manifest of index m for p (and osVersion, when
// given), or its only one. Of an index of linux/amd64 and linux/amd64/v3
// images, both of which a v3 machine runs, p linux/amd64/v3 is the v3
// one (platform.Closest).
func pick(m *v1.IndexManifest, p *platform.Platform, osVersion, what string) (v1.Descriptor, error) {
	var found []v1.Descriptor
	for _, d := range m.Manifests {
		if !d.MediaType.IsImage() || d.Platform == nil || d.Platform.OS == "unknown" {
			continue
		}
		found = append(found, d)
	}
	var has []string
	for _, d := range found {
		has = append(has, platformName(*d.Platform))
	}
	if p != nil {
		found = p.Closest(found)
	}
	if osVersion != "" {
		found = slices.DeleteFunc(found, func(d v1.Descriptor) bool { return d.Platform.OSVersion != osVersion })
	}
	asked := ""
	if p != nil {
		asked = p.String()
		if osVersion != "" {
			asked += ":" + osVersion
		}
	}
	switch {
	case len(found) == 0 && p != nil:
		return v1.Descriptor{}, fmt.Errorf("%s has no image for %s (it has %s)", what, asked, strings.Join(has, ", "))
	case len(found) > 1 && p == nil:
		return v1.Descriptor{}, fmt.Errorf("%s has %d images (%s); name one with --platform", what, len(found), strings.Join(has, ", "))
	case len(found) > 1 && osVersion == "" && found[0].Platform.OSVersion != "":
		return v1.Descriptor{}, fmt.Errorf("%s has %d images for %s, one per os.version (%s); name one with --platform %s:OSVERSION", what, len(found), asked, strings.Join(has, ", "), asked)
	case len(found) != 1:
		return v1.Descriptor{}, fmt.Errorf("%s has %d images for %s; it holds %s", what, len(found), asked, strings.Join(has, ", "))
	}
	return found[0], nil
}

// platformName names an index entry's platform as --platform takes it,
// its os.version after a ':'.
func platformName(p v1.Platform) string {
	n := platform.Name(p.OS, p.Architecture, p.Variant)
	if p.OSVersion != "" {
		n += ":" + p.OSVersion
	}
	return n
}

// onePlatform checks that the image of a reference that names a single
// manifest, not an index, is of the platform asked: else its document
// would be printed as the answer for another platform. The platform is
// the descriptor's where it names one, else the image config's.
func onePlatform(d v1.Descriptor, img func() (v1.Image, error), p *platform.Platform, osVersion, what string) error {
	if p == nil {
		return nil
	}
	plat := d.Platform
	if plat == nil {
		im, err := img()
		if err != nil {
			return err
		}
		cf, err := im.ConfigFile()
		if err != nil {
			return fmt.Errorf("%s: reading its config for its platform: %w", what, err)
		}
		plat = cf.Platform()
	}
	if plat == nil || !p.Describes(*plat) || osVersion != "" && plat.OSVersion != osVersion {
		name := "no platform"
		if plat != nil {
			name = platformName(*plat)
		}
		asked := p.String()
		if osVersion != "" {
			asked += ":" + osVersion
		}
		return fmt.Errorf("%s has no image for %s (it is one image, of %s)", what, asked, name)
	}
	return nil
}

// registryReferrer finds the document of artifact type want attached to
// ref's image through the registry's referrers API or fallback tag.
func registryReferrer(ctx context.Context, ref string, p *platform.Platform, osVersion, want string) ([]byte, error) {
	nref, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	opts := regauth.Options(ctx)
	desc, err := remote.Get(nref, opts...)
	if err != nil {
		return nil, regauth.Explain(err)
	}
	subject := desc.Descriptor
	var top *v1.IndexManifest
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		if top, err = idx.IndexManifest(); err != nil {
			return nil, err
		}
		if subject, err = pick(top, p, osVersion, ref); err != nil {
			return nil, err
		}
	} else if err := onePlatform(subject, desc.Image, p, osVersion, ref); err != nil {
		return nil, err
	}
	refs, err := remote.Referrers(nref.Context().Digest(subject.Digest.String()), opts...)
	if err != nil {
		return nil, regauth.Explain(err)
	}
	m, err := refs.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.ArtifactType != want {
			continue
		}
		img, err := remote.Image(nref.Context().Digest(d.Digest.String()), opts...)
		if err != nil {
			return nil, regauth.Explain(err)
		}
		return firstBlob(img)
	}
	if top != nil {
		data, found, err := attested(top, subject.Digest, want, func(h v1.Hash) (v1.Image, error) {
			img, err := remote.Image(nref.Context().Digest(h.String()), opts...)
			return img, regauth.Explain(err)
		})
		if found || err != nil {
			return data, err
		}
	}
	return nil, fmt.Errorf("%s (%s) has no %s attached%s", ref, subject.Digest, want, howToAttach(want))
}

// archiveReferrer finds it in the docker archive file where the archive
// is also an OCI layout, as docker save writes one since Docker 25: of
// an image pulled or built for several platforms with its attestation
// manifests (BuildKit's, pallet's --attest-index), the index and those
// it holds of them. Where the archive holds no attachment at all (every
// archive pallet writes: docker load takes none), that is said, with
// where pallet puts them. The archive is read as inspect reads it first,
// so that a missing or broken one is said as such.
func archiveReferrer(ctx context.Context, file string, p *platform.Platform, osVersion, want string) ([]byte, error) {
	if _, err := Open(ctx, "docker:"+file); err != nil {
		return nil, err
	}
	none := fmt.Errorf("docker:%s carries no SBOM or provenance: a docker archive holds images alone, and pallet attaches those documents to an image in an OCI layout or a registry (as referrers, or with --attest-index in its index); read them from the oci: or registry: output of the same build, or write them to files with --sbom-dir", file)
	f, blobs, err := archiveBlobs(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	root, ok, err := blobs.layoutIndex()
	if err != nil {
		return nil, fmt.Errorf("reading the docker archive %s: %w", file, err)
	}
	if !ok {
		return nil, none
	}
	if has, err := hasAttachments(root); err != nil {
		return nil, fmt.Errorf("reading the docker archive %s: %w", file, err)
	} else if !has {
		return nil, none
	}
	return referrerIn(root, "docker:"+file, "", p, osVersion, want)
}

// hasAttachments says whether the layout whose index.json is root holds
// any document attached to an image: a referrer among its entries, or an
// attestation manifest in an index it names.
func hasAttachments(root v1.ImageIndex) (bool, error) {
	m, err := root.IndexManifest()
	if err != nil {
		return false, err
	}
	for _, d := range m.Manifests {
		if d.ArtifactType != "" {
			return true, nil
		}
		if !d.MediaType.IsIndex() {
			continue
		}
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			return false, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return false, err
		}
		for _, e := range im.Manifests {
			if e.Annotations[sbom.RefTypeAnnotation] == sbom.AttestationManifest {
				return true, nil
			}
		}
	}
	return false, nil
}

// layoutReferrer finds it in the layout dir, among the untagged entries
// whose manifest names the image as its subject; tag, where given, names
// the image's entry.
func layoutReferrer(dir, tag string, p *platform.Platform, osVersion, want string) ([]byte, error) {
	root, err := LayoutIndex(dir)
	if err != nil {
		return nil, err
	}
	return referrerIn(root, "oci:"+dir, tag, p, osVersion, want)
}

// referrerIn finds it in the layout whose index.json is root, at the
// location where (oci:DIR, docker:FILE): among the untagged entries
// whose manifest names the image as its subject, and the attestation
// manifests of the image's index; tag, where given, names the image's
// entry.
func referrerIn(root v1.ImageIndex, where, tag string, p *platform.Platform, osVersion, want string) ([]byte, error) {
	spec := where
	if tag != "" {
		spec += ":" + tag
	}
	m, err := root.IndexManifest()
	if err != nil {
		return nil, err
	}
	var named []v1.Descriptor
	if tag != "" {
		if named, err = SelectRef(m.Manifests, tag); err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
	} else {
		var names []string
		for _, d := range m.Manifests {
			if n, tagged := d.Annotations[refName]; tagged {
				named = append(named, d)
				names = append(names, n)
			}
		}
		if len(named) == 0 && !strings.HasPrefix(where, "oci:") {
			// docker save of an image by its ID names it nowhere,
			// and an archive is of the images it was asked for: its
			// entries that are no attachment are those.
			for _, d := range m.Manifests {
				if d.ArtifactType == "" {
					named = append(named, d)
					names = append(names, d.Digest.String())
				}
			}
		}
		if len(named) == 0 {
			return nil, fmt.Errorf("%s names no image", where)
		}
		// Not the first of several: which one is the reader's to say.
		for _, d := range named[1:] {
			if d.Digest != named[0].Digest {
				if dir, ok := strings.CutPrefix(where, "oci:"); ok {
					return nil, fmt.Errorf("%s holds several images (%s): name one, as oci:%s:NAME", where, strings.Join(names, ", "), dir)
				}
				return nil, fmt.Errorf("%s holds several images (%s): pallet sbom reads an archive of one (docker save NAME)", where, strings.Join(names, ", "))
			}
		}
	}
	top := named[0]
	subject := top
	var idx v1.ImageIndex
	var im *v1.IndexManifest
	if top.MediaType.IsIndex() {
		if idx, err = root.ImageIndex(top.Digest); err != nil {
			return nil, err
		}
		if im, err = idx.IndexManifest(); err != nil {
			return nil, err
		}
		if subject, err = pick(im, p, osVersion, spec); err != nil {
			return nil, err
		}
	} else if err := onePlatform(top, func() (v1.Image, error) { return root.Image(top.Digest) }, p, osVersion, spec); err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if _, tagged := d.Annotations[refName]; tagged || d.ArtifactType != want {
			continue
		}
		img, err := root.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		mf, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		if mf.Subject != nil && mf.Subject.Digest == subject.Digest {
			return firstBlob(img)
		}
	}
	if im != nil {
		data, found, err := attested(im, subject.Digest, want, idx.Image)
		if found || err != nil {
			return data, err
		}
	}
	return nil, fmt.Errorf("%s (%s) has no %s attached%s", spec, subject.Digest, want, howToAttach(want))
}

// howToAttach says which pallet build flag attaches a document of media
// type want: an image built without it has none, and the bare "has no"
// left the reader to guess whether it was lost or never made.
func howToAttach(want string) string {
	flag := "--sbom"
	switch want {
	case sbom.MediaTypeInToto:
		flag = "--provenance"
	case sbom.MediaTypeCycloneDX:
		flag = "--sbom=cyclonedx"
	}
	return fmt.Sprintf(" (pallet build %s attaches one; an image built without it has none)", flag)
}

// Predicate types of the documents, by the media type a referrer gives
// each.
var predicateOf = map[string]string{
	sbom.MediaTypeSPDX:      sbom.PredicateSPDX,
	sbom.MediaTypeCycloneDX: sbom.PredicateCycloneDX,
	sbom.MediaTypeInToto:    sbom.PredicateProvenance,
}

// attested finds the document of media type want about the image
// subject in m's attestation manifests, as --attest-index (and BuildKit)
// attach them: an entry naming subject, whose layers are in-toto
// statements, one per predicate type. An SBOM is printed as the
// referrer's would be, its statement's predicate alone, indented as
// pallet writes documents; a provenance is the statement itself.
// The statement must say what the index says of it, its subject the
// image and its predicate type the layer's: an attestation manifest
// moved from another image's index, or a layer holding another
// document, was printed as this image's.
// found is false where no attestation names subject.
func attested(m *v1.IndexManifest, subject v1.Hash, want string, image func(v1.Hash) (v1.Image, error)) (data []byte, found bool, err error) {
	predicate := predicateOf[want]
	// Every attestation manifest naming subject is looked at: of two
	// documents of the kind asked, which is the image's is not pallet's
	// to say (the first was printed). The same blob twice is one.
	var (
		in    v1.Hash
		img   v1.Image
		layer v1.Descriptor
	)
	for _, d := range m.Manifests {
		if d.Annotations[sbom.RefTypeAnnotation] != sbom.AttestationManifest || d.Annotations[sbom.RefDigestAnnotation] != subject.String() {
			continue
		}
		found = true
		im, err := image(d.Digest)
		if err != nil {
			return nil, true, err
		}
		mf, err := im.Manifest()
		if err != nil {
			return nil, true, err
		}
		for _, l := range mf.Layers {
			if l.Annotations[sbom.PredicateTypeAnnotation] != predicate {
				continue
			}
			if img != nil && l.Digest != layer.Digest {
				return nil, true, fmt.Errorf("%s has two %s statements attached in its index, %s in the attestation manifest %s and %s in %s: which is the image's is not for pallet sbom to say", subject, predicate, layer.Digest, in, l.Digest, d.Digest)
			}
			in, img, layer = d.Digest, im, l
		}
	}
	if img == nil {
		return nil, false, nil
	}
	if layer.MediaType != sbom.MediaTypeInToto {
		return nil, true, fmt.Errorf("the attestation manifest %s: its %s layer %s is %s, not an in-toto statement (%s)", in, predicate, layer.Digest, layer.MediaType, sbom.MediaTypeInToto)
	}
	l, err := img.LayerByDigest(layer.Digest)
	if err != nil {
		return nil, true, err
	}
	if data, err = documentOf(l); err != nil {
		return nil, true, fmt.Errorf("the attestation manifest %s: %w", in, err)
	}
	pred, err := sbom.PredicateAbout(data, subject.Algorithm, subject.Hex, predicate)
	if err != nil {
		return nil, true, fmt.Errorf("the attestation manifest %s: its %s layer %s: %w", in, predicate, layer.Digest, err)
	}
	if want == sbom.MediaTypeInToto {
		return data, true, nil
	}
	var out bytes.Buffer
	if err := json.Indent(&out, pred, "", "  "); err != nil {
		return nil, true, err
	}
	return append(out.Bytes(), '\n'), true, nil
}

// maxDocument bounds an attached SBOM or provenance document read back.
const maxDocument = 64 << 20

// firstBlob reads an artifact manifest's one blob, checked against its
// digest as it is read.
func firstBlob(img v1.Image) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		return nil, fmt.Errorf("the attachment holds no document: %v", err)
	}
	return documentOf(layers[0])
}

// documentOf reads an attached document's blob, bounded and checked
// against its digest as it is read.
func documentOf(layer v1.Layer) ([]byte, error) {
	rc, err := layer.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := bounded.ReadAll(rc, maxDocument)
	if err != nil {
		return nil, fmt.Errorf("the attachment's blob: %w", err)
	}
	d, err := layer.Digest()
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); d.Algorithm != "sha256" || hex.EncodeToString(sum[:]) != d.Hex {
		return nil, fmt.Errorf("the attachment's blob does not match its digest %s", d)
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("the attachment is not JSON")
	}
	return data, nil
}
