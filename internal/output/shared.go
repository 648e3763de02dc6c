package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// A layout may hold images other tools put there (skopeo copy to
// oci:DIR:other, crane, umoci, a signer attaching a signature): an oci:
// output replaces pallet's own entries and the tags the build writes, and
// keeps every other entry with the blobs it needs. Pallet marks each
// entry it writes with the ref name it wrote it under (writtenKey), so
// that a copy another tool makes under another name (umoci tag) is that
// tool's. An untagged attachment (a referrer) of something that goes
// goes too, unless the new index names its subject again.

// writtenKey marks an index.json entry pallet wrote: its value is the
// entry's ref name, or attachmentMark for an untagged attachment.
const writtenKey = "dev.pallet.written"

const attachmentMark = "attachment"

// maxManifest bounds a manifest or index read from a layout to find the
// blobs an entry needs.
const maxManifest = 16 << 20

const refNameKey = "org.opencontainers.image.ref.name"

// sharing is what an earlier layout's index.json holds besides what the
// build replaces.
type sharing struct {
	dir string
	// gone are the entries that go whatever the new index holds;
	// others are other tools', whose attachments go with their subject.
	gone, others []v1.Descriptor
	// othersRaw are others as index.json has them, when it could be read
	// so; top is index.json's top level as written.
	othersRaw []json.RawMessage
	top       map[string]json.RawMessage

	// Set by settle, once the new index is known:
	// keep are the entries the new index keeps, in their order; keepRaw
	// the same as index.json had them (nil if unknown).
	keep    []v1.Descriptor
	keepRaw []json.RawMessage
	// keepBlobs are the blobs they need, as far as the layout holds them.
	keepBlobs map[v1.Hash]bool
	// dropBlobs are the blobs the entries that go needed: only these may
	// be removed when entries are kept. A blob no entry named may be
	// another tool's, written before the index that will name it.
	dropBlobs map[v1.Hash]bool
}

// readSharing sorts the entries of the layout dir's index.json: pallet's
// own and those tagged with a ref name in taken go; the rest are other
// tools', kept unless settle finds they are attachments of what goes.
func readSharing(dir string, taken map[string]bool) (*sharing, error) {
	var idx indexFile
	if err := readJSON(filepath.Join(dir, "index.json"), maxIndexJSON, &idx); err != nil {
		return nil, err
	}
	s := &sharing{dir: dir, top: idx.top}
	for i, d := range idx.Manifests {
		name, tagged := d.Annotations[refNameKey]
		mark, marked := d.Annotations[writtenKey]
		ours := marked && (tagged && mark == name || !tagged && mark == attachmentMark)
		if ours || tagged && taken[name] {
			s.gone = append(s.gone, d)
		} else {
			s.others = append(s.others, d)
			if idx.entries != nil {
				s.othersRaw = append(s.othersRaw, idx.entries[i])
			}
		}
	}
	return s, nil
}

// indexFile is an index.json read once, both as go-containerregistry
// models it and as written: its top level and its entries, for what a
// v1.IndexManifest does not hold (keepForeignFields).
type indexFile struct {
	v1.IndexManifest
	top     map[string]json.RawMessage
	entries []json.RawMessage // nil unless one per manifest
}

func (f *indexFile) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &f.IndexManifest); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &f.top); err != nil {
		return err
	}
	if json.Unmarshal(f.top["manifests"], &f.entries) != nil || len(f.entries) != len(f.Manifests) {
		f.entries = nil
	}
	return nil
}

// settle decides, once the new index's entries (manifests, whose blobs
// are written into newDir) are known, which of the other tools' entries stay: all but the untagged attachments whose
// subject went and is not named again (repeated, for attachments of
// attachments); and the blobs each side needs.
func (s *sharing) settle(newDir string, manifests []v1.Descriptor) {
	read := func(h v1.Hash) ([]byte, bool) {
		if b, ok := readBlob(newDir, h); ok {
			return b, ok
		}
		return readBlob(s.dir, h)
	}
	named := map[v1.Hash]bool{}
	for _, d := range manifests {
		reachManifests(read, d, named)
	}
	went := map[v1.Hash]bool{}
	for _, d := range s.gone {
		reachManifests(read, d, went)
	}
	// The subject of each untagged entry, read once for every round.
	subjects := map[v1.Hash]*v1.Hash{}
	for _, d := range s.others {
		if _, tagged := d.Annotations[refNameKey]; !tagged {
			subjects[d.Digest] = subjectOf(read, d)
		}
	}
	dropped := slices.Clone(s.gone)
	// left are the indexes in others of the entries still kept.
	left := make([]int, len(s.others))
	for i := range left {
		left[i] = i
	}
	for changed := true; changed; {
		changed = false
		var next []int
		for _, i := range left {
			d := s.others[i]
			if subject := subjects[d.Digest]; subject != nil && went[*subject] && !named[*subject] {
				dropped = append(dropped, d)
				reachManifests(read, d, went)
				changed = true
				continue
			}
			next = append(next, i)
		}
		left = next
	}
	for _, i := range left {
		s.keep = append(s.keep, s.others[i])
		if s.othersRaw != nil {
			s.keepRaw = append(s.keepRaw, s.othersRaw[i])
		}
	}
	s.keepBlobs, s.dropBlobs = map[v1.Hash]bool{}, map[v1.Hash]bool{}
	for _, d := range s.keep {
		reach(read, d, s.keepBlobs)
	}
	for _, d := range dropped {
		reach(read, d, s.dropBlobs)
	}
}

// subjectOf is the subject of the manifest d names, if it has one.
func subjectOf(read func(v1.Hash) ([]byte, bool), d v1.Descriptor) *v1.Hash {
	b, ok := read(d.Digest)
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
func reach(read func(v1.Hash) ([]byte, bool), d v1.Descriptor, blobs map[v1.Hash]bool) {
	walk(read, d, blobs, true)
}

// reachManifests adds to manifests d and the manifests and indexes it
// names: what an attachment's subject can be.
func reachManifests(read func(v1.Hash) ([]byte, bool), d v1.Descriptor, manifests map[v1.Hash]bool) {
	walk(read, d, manifests, false)
}

func walk(read func(v1.Hash) ([]byte, bool), d v1.Descriptor, seen map[v1.Hash]bool, leaves bool) {
	if seen[d.Digest] {
		return
	}
	seen[d.Digest] = true
	if !d.MediaType.IsIndex() && !d.MediaType.IsImage() && !isManifestJSON(d) {
		return
	}
	b, ok := read(d.Digest)
	if !ok {
		return
	}
	var m struct {
		Manifests []v1.Descriptor `json:"manifests"`
		Config    *v1.Descriptor  `json:"config"`
		Layers    []v1.Descriptor `json:"layers"`
		Blobs     []v1.Descriptor `json:"blobs"` // an artifact manifest's
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	for _, c := range m.Manifests {
		walk(read, c, seen, leaves)
	}
	if !leaves {
		return
	}
	if m.Config != nil {
		seen[m.Config.Digest] = true
	}
	for _, l := range append(m.Layers, m.Blobs...) {
		seen[l.Digest] = true
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

// keepForeignFields carries into the new index.json, index, what
// go-containerregistry does not model and the old one held (old is its
// top level): top-level fields and annotations pallet never writes
// (another tool's), and the kept entries (the last len(kept) of the new
// index) as they were written, with the fields re-encoding a
// v1.Descriptor drops. With nothing to carry index is returned as it is.
func keepForeignFields(old map[string]json.RawMessage, index []byte, kept []json.RawMessage) ([]byte, error) {
	if len(old) == 0 && len(kept) == 0 {
		return index, nil
	}
	var cur map[string]json.RawMessage
	if err := json.Unmarshal(index, &cur); err != nil {
		return nil, err
	}
	changed := false
	for k, v := range old {
		switch k {
		case "schemaVersion", "mediaType", "manifests":
			continue
		}
		if _, ok := cur[k]; !ok {
			cur[k], changed = v, true
		}
	}
	var entries []json.RawMessage
	if len(kept) > 0 && json.Unmarshal(cur["manifests"], &entries) == nil && len(entries) >= len(kept) {
		tail := entries[len(entries)-len(kept):]
		for i, raw := range kept {
			if !sameJSON(raw, tail[i]) {
				tail[i], changed = raw, true
			}
		}
		if changed {
			b, err := json.Marshal(entries)
			if err != nil {
				return nil, err
			}
			cur["manifests"] = b
		}
	}
	if !changed {
		return index, nil
	}
	return json.MarshalIndent(cur, "", "   ")
}

// sameJSON says whether a and b hold the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
