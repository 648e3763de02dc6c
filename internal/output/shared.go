package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// A layout may hold images other tools put there (skopeo copy to
// oci:DIR:other, crane, umoci): an oci: output replaces pallet's own
// entries and the tags the build writes, and keeps every other entry with
// the blobs it needs. Pallet marks the entries it writes (writtenKey);
// those of an earlier pallet, which did not, go when the build writes
// their tag, as a tag of another tool's does.

// writtenKey marks an index.json entry pallet wrote.
const writtenKey = "dev.pallet.written"

// maxManifest bounds a manifest or index read from a layout to find the
// blobs an entry needs.
const maxManifest = 16 << 20

// sharing is what an earlier layout's index.json holds besides what the
// build replaces.
type sharing struct {
	// keep are the entries the new index keeps, in their order.
	keep []v1.Descriptor
	// keepBlobs are the blobs they need, as far as the layout holds them.
	keepBlobs map[v1.Hash]bool
	// dropBlobs are the blobs the entries that go needed: only these may
	// be removed when entries are kept. A blob no entry named may be
	// another tool's, written before the index that will name it.
	dropBlobs map[v1.Hash]bool
}

// readSharing sorts the entries of the layout dir's index.json: pallet's,
// and those tagged with a ref name in taken, go; so do the untagged
// attachments (referrers) of what goes; the rest is kept.
func readSharing(dir string, taken map[string]bool) (*sharing, error) {
	var idx v1.IndexManifest
	if err := readJSON(filepath.Join(dir, "index.json"), maxIndexJSON, &idx); err != nil {
		return nil, err
	}
	gone := map[v1.Hash]bool{}
	var rest []v1.Descriptor
	for _, d := range idx.Manifests {
		name, tagged := d.Annotations["org.opencontainers.image.ref.name"]
		if _, ours := d.Annotations[writtenKey]; ours || tagged && taken[name] {
			gone[d.Digest] = true
			continue
		}
		rest = append(rest, d)
	}
	s := &sharing{keepBlobs: map[v1.Hash]bool{}, dropBlobs: map[v1.Hash]bool{}}
	var dropped []v1.Descriptor
	for _, d := range idx.Manifests {
		if gone[d.Digest] {
			dropped = append(dropped, d)
		}
	}
	for _, d := range rest {
		if _, tagged := d.Annotations["org.opencontainers.image.ref.name"]; !tagged {
			if subject := subjectOf(dir, d); subject != nil && gone[*subject] {
				dropped = append(dropped, d)
				continue
			}
		}
		s.keep = append(s.keep, d)
	}
	for _, d := range s.keep {
		reach(dir, d, s.keepBlobs)
	}
	for _, d := range dropped {
		reach(dir, d, s.dropBlobs)
	}
	return s, nil
}

// subjectOf is the subject of the manifest d names, if it has one.
func subjectOf(dir string, d v1.Descriptor) *v1.Hash {
	b, ok := readBlob(dir, d.Digest)
	if !ok {
		return nil
	}
	var m struct {
		Subject *v1.Descriptor `json:"subject"`
	}
	if json.Unmarshal(b, &m) != nil || m.Subject == nil {
		return nil
	}
	return &m.Subject.Digest
}

// reach adds to blobs d and every blob it names, through indexes and
// manifests, that the layout holds.
func reach(dir string, d v1.Descriptor, blobs map[v1.Hash]bool) {
	if blobs[d.Digest] {
		return
	}
	blobs[d.Digest] = true
	if !d.MediaType.IsIndex() && !d.MediaType.IsImage() && !isManifestJSON(d) {
		return
	}
	b, ok := readBlob(dir, d.Digest)
	if !ok {
		return
	}
	var m struct {
		Manifests []v1.Descriptor `json:"manifests"`
		Config    *v1.Descriptor  `json:"config"`
		Layers    []v1.Descriptor `json:"layers"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	for _, c := range m.Manifests {
		reach(dir, c, blobs)
	}
	if m.Config != nil {
		blobs[m.Config.Digest] = true
	}
	for _, l := range m.Layers {
		blobs[l.Digest] = true
	}
}

// isManifestJSON says whether d, of a media type neither an image nor an
// index, may still be a manifest (an artifact's): one without a media
// type, or of the OCI manifest's, is read to find out.
func isManifestJSON(d v1.Descriptor) bool {
	return d.MediaType == "" || d.MediaType == "application/vnd.oci.artifact.manifest.v1+json"
}

// readBlob reads a small blob of the layout, only if it is a regular file
// within maxManifest whose bytes are what its name says.
func readBlob(dir string, h v1.Hash) ([]byte, bool) {
	p := filepath.Join(dir, "blobs", h.Algorithm, h.Hex)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxManifest {
		return nil, false
	}
	b, err := bounded.ReadFile(p, maxManifest)
	if err != nil {
		return nil, false
	}
	got, _, err := v1.SHA256(bytes.NewReader(b))
	if err != nil || h.Algorithm != "sha256" || got != h {
		return nil, false
	}
	return b, true
}
