package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// emptyConfig is the OCI 1.1 empty descriptor's content and type, the
// config of an artifact that has none.
var emptyConfig = []byte("{}")

const emptyConfigType types.MediaType = "application/vnd.oci.empty.v1+json"

// Referrer is an OCI 1.1 artifact manifest about subject: one blob of
// content (an SBOM, a provenance) of artifactType, found through the
// registry's referrers API (or its fallback tag) from the subject's
// digest. annotations go on the manifest, layerAnnotations on the blob.
func Referrer(subject v1.Descriptor, artifactType string, content []byte, annotations, layerAnnotations map[string]string) (v1.Image, error) {
	layer := static.NewLayer(content, types.MediaType(artifactType))
	ld, err := partial.Descriptor(layer)
	if err != nil {
		return nil, err
	}
	ld.Annotations = layerAnnotations
	sum := sha256.Sum256(emptyConfig)
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  artifactType,
		Config: v1.Descriptor{
			MediaType: emptyConfigType,
			Digest:    v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])},
			Size:      int64(len(emptyConfig)),
		},
		Layers:      []v1.Descriptor{*ld},
		Annotations: annotations,
		Subject:     &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&referrer{manifest: bytes.TrimSuffix(buf.Bytes(), []byte("\n")), layer: layer, digest: ld.Digest})
}

// referrer is the core of an artifact manifest: its manifest bytes, its
// empty config and its one blob.
type referrer struct {
	manifest []byte
	layer    v1.Layer
	digest   v1.Hash
}

func (r *referrer) RawManifest() ([]byte, error)        { return r.manifest, nil }
func (r *referrer) RawConfigFile() ([]byte, error)      { return emptyConfig, nil }
func (r *referrer) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func (r *referrer) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if h == r.digest {
		return r.layer, nil
	}
	return nil, fmt.Errorf("artifact manifest has no blob %s", h)
}
