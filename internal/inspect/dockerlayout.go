package inspect

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// dockerLayout describes the images of a docker archive that is also an
// OCI layout (index.json and oci-layout beside manifest.json, as docker
// save writes since Docker 25, and pallet writes): by the manifests the
// layout holds, which docker load from 25 on and containerd's import
// take, and whose digests are the ones the build printed and a push
// gives. From manifest.json alone go-containerregistry makes up a docker
// manifest of its own, with another digest. Each image goes by the
// RepoTags manifest.json gives its config, which docker load applies.
//
// ok is false, and manifest.json describes the archive, where there is
// no layout, or where the two do not list the same images: the layout
// names an index (docker save of a pulled multi-platform image, whose
// other platforms it lacks), or manifest.json an image it lacks.
func (r *Report) dockerLayout(blobs tarBlobs, m tarball.Manifest) (ok bool, err error) {
	if _, ok := blobs.files["oci-layout"]; !ok {
		return false, nil
	}
	raw, err := blobs.read("index.json", maxIndexJSON)
	if err != nil {
		return false, nil // no index.json: a docker archive alone
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(raw, &idx); err != nil {
		return false, fmt.Errorf("index.json: %w", err)
	}
	var images []*layoutImage
	tags := map[v1.Hash][]string{}
	for _, d := range idx.Manifests {
		if !d.MediaType.IsImage() {
			return false, nil
		}
		if _, seen := tags[d.Digest]; seen {
			continue // another tag of it
		}
		img, err := blobs.image(d)
		if err != nil {
			return false, fmt.Errorf("index.json: %s: %w", d.Digest, err)
		}
		images = append(images, img)
		tags[d.Digest] = nil
	}
	// manifest.json's entries, by their config, to the layout's images.
	for _, d := range m {
		found := false
		for _, img := range images {
			if path.Clean(d.Config) == blobName(img.manifest.Config.Digest) {
				found = true
				tags[img.desc.Digest] = append(tags[img.desc.Digest], d.RepoTags...)
			}
		}
		if !found {
			return false, nil
		}
	}
	for _, li := range images {
		img, err := partial.CompressedToImage(li)
		if err != nil {
			return false, err
		}
		desc, err := describe(tags[li.desc.Digest], img, nil)
		if err != nil {
			return false, fmt.Errorf("%s: %w", li.desc.Digest, err)
		}
		r.Images = append(r.Images, desc)
	}
	return true, nil
}

// span is where a regular file's content lies in the archive.
type span struct{ off, size int64 }

// tarBlobs is a tar indexed in one pass, whose contents are then read
// where the index says they lie: go-containerregistry's tarball package
// walks the tar again for each file it looks up.
type tarBlobs struct {
	f    io.ReaderAt
	size int64
	// first holds the first entry of each clean name, whatever its
	// type, as go-containerregistry's tarball package finds a name.
	first map[string]tarEntry
	// files holds the first regular file of each clean name: the
	// layout's files.
	files map[string]span
}

// tarEntry is what resolve and open need of an entry's header, where its
// content lies, and its place among the tar's entries (from 0): kept for
// every name, it is not the header, whose times, owner names and PAX
// records made the index more than twice as large (TestTarIndexSize:
// 387 bytes an entry of 512, 171 without).
type tarEntry struct {
	typ    byte
	sparse bool
	// count is how many entries of the tar have this clean name: in the
	// padding after typ and sparse, it costs the index nothing.
	count int32
	size  int64
	link  string
	off   int64
	n     int
}

// tarFiles indexes the tar of size bytes in f without reading the
// entries' contents: tar.Reader seeks over a file's content, and leaves
// the reader at the next entry's.
func tarFiles(f io.ReaderAt, size int64) (tarBlobs, error) {
	b := tarBlobs{f: f, size: size, first: map[string]tarEntry{}, files: map[string]span{}}
	sr := io.NewSectionReader(f, 0, size)
	tr := tar.NewReader(sr)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader) {
			// Bare, the tar reader's error ("unexpected EOF") says
			// nothing of the archive: a copy cut short, or no tar.
			return b, fmt.Errorf("not a tar, or one cut short: after %d entries, %w", n, err)
		}
		if err != nil {
			return b, err
		}
		off, err := sr.Seek(0, io.SeekCurrent)
		if err != nil {
			return b, err
		}
		name := path.Clean(h.Name)
		if e, seen := b.first[name]; !seen {
			b.first[name] = tarEntry{typ: h.Typeflag, sparse: sparse(h), size: h.Size, link: h.Linkname, off: off, n: n, count: 1}
		} else if e.count < math.MaxInt32 {
			e.count++
			b.first[name] = e
		}
		if _, seen := b.files[name]; seen || h.Typeflag != tar.TypeReg {
			continue
		}
		b.files[name] = span{off, h.Size}
	}
}

// resolve is the entry go-containerregistry's tarball package reads for
// name, and the name it is found by: the first of that name, links
// followed beside it. A name not in the tar, or a cycle of links, is an
// error in its words.
func (b tarBlobs) resolve(name string) (tarEntry, string, error) {
	return b.follow(name, nil)
}

// follow walks from name to the entry resolve reads, as
// go-containerregistry's tarball package does, showing visit (where not
// nil) each name on the way and its first entry (none, count 0, for a
// name not in the tar) before it is followed: resolve and single must
// agree on which names a link leads through. visit's error ends the walk
// and is returned as it is.
func (b tarBlobs) follow(name string, visit func(name string, e tarEntry) error) (tarEntry, string, error) {
	// Keyed by the name as given, not cleaned, as go-containerregistry
	// keys it: the words of a cycle's error depend on it.
	seen := map[string]bool{}
	for {
		if seen[name] {
			return tarEntry{}, name, fmt.Errorf("link cycle detected for %s", name)
		}
		seen[name] = true
		e, ok := b.first[path.Clean(name)]
		if visit != nil {
			if err := visit(path.Clean(name), e); err != nil {
				return tarEntry{}, name, err
			}
		}
		if !ok {
			return tarEntry{}, name, fmt.Errorf("file %s not found in tar", name)
		}
		if e.typ != tar.TypeSymlink && e.typ != tar.TypeLink {
			return e, name, nil
		}
		name = path.Join(path.Dir(name), path.Clean(e.link))
	}
}

// single refuses name, and each name its links lead to as resolve
// follows them, where the tar holds more than one entry of it, as an
// appended tar does: go-containerregistry, and so resolve, reads the
// first, where docker load (which unpacks the archive, moby's
// image/tarexport) and ctr import (which reads it in one pass,
// containerd's core/images/archive) keep the last, so which images a
// loader would see cannot be said. A rooted name is the same to docker
// load, which unpacks /manifest.json as manifest.json.
func (b tarBlobs) single(name string) error {
	var twice error
	// A name missing, or a cycle, is resolve's to say where it is read.
	b.follow(path.Clean(name), func(name string, e tarEntry) error {
		n := int64(e.count)
		if !strings.HasPrefix(name, "/") {
			n += int64(b.first["/"+name].count)
		}
		if n > 1 {
			twice = fmt.Errorf("%s: the archive holds %d entries of that name (an appended tar?): docker load and ctr import read the last of them, go-containerregistry the first, so which images the archive holds cannot be said", name, n)
		}
		return twice
	})
	return twice
}

// open reads the content of name's entry (resolve) as tar.Reader gives it.
func (b tarBlobs) open(name string) (io.Reader, error) {
	e, _, err := b.resolve(name)
	if err != nil {
		return nil, err
	}
	if e.sparse {
		// tar.Reader fills a sparse file's holes from its map, which
		// the index does not keep: walked to again, for an entry no
		// docker archive writer makes.
		tr := tar.NewReader(io.NewSectionReader(b.f, 0, b.size))
		for range e.n + 1 {
			if _, err := tr.Next(); err != nil {
				return nil, err
			}
		}
		return tr, nil
	}
	size := e.size
	switch e.typ {
	case tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
		size = 0 // as tar.Reader reads them, whatever their size field says
	}
	return io.NewSectionReader(b.f, e.off, size), nil
}

// sparse says whether h is a GNU sparse file, old format or PAX.
func sparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// archiveJSON refuses the JSON file name of a docker archive when it is
// over maxArchiveJSON, before go-containerregistry reads it whole. One
// that is missing, or a cycle of links, is left to the reader to say.
func (b tarBlobs) archiveJSON(name string) error {
	e, name, err := b.resolve(name)
	if err != nil {
		return nil
	}
	if e.size > maxArchiveJSON {
		return fmt.Errorf("%s: %d bytes, over %d (4 MiB): not a docker archive's JSON", name, e.size, maxArchiveJSON)
	}
	return nil
}

// manifest reads the docker archive's manifest.json as
// go-containerregistry's tarball.LoadManifest does, from the index.
func (b tarBlobs) manifest() (tarball.Manifest, error) {
	r, err := b.open("manifest.json")
	if err != nil {
		return nil, err
	}
	var m tarball.Manifest
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// opener gives go-containerregistry the archive without opening it
// again (a tarball.Opener).
func (b tarBlobs) opener() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(b.f, 0, b.size)), nil
}

// blobName is the name of the blob of digest d in a layout.
func blobName(d v1.Hash) string { return path.Join("blobs", d.Algorithm, d.Hex) }

// read reads the file name whole, refusing one over max bytes.
func (b tarBlobs) read(name string, max int64) ([]byte, error) {
	if err := b.single(name); err != nil {
		return nil, err
	}
	s, ok := b.files[name]
	if !ok {
		return nil, fmt.Errorf("%s: not in the archive", name)
	}
	if s.size > max {
		return nil, fmt.Errorf("%s: %d bytes, over %d", name, s.size, max)
	}
	data := make([]byte, s.size)
	if _, err := b.f.ReadAt(data, s.off); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// blob reads the blob of d whole, checking its digest.
func (b tarBlobs) blob(d v1.Hash, max int64) ([]byte, error) {
	if d.Algorithm != "sha256" {
		return nil, fmt.Errorf("blob %s: not sha256", d)
	}
	data, err := b.read(blobName(d), max)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != d.Hex {
		return nil, fmt.Errorf("%s: its content is not of that digest", blobName(d))
	}
	return data, nil
}

// image reads the manifest of the layout's entry d.
func (b tarBlobs) image(d v1.Descriptor) (*layoutImage, error) {
	raw, err := b.blob(d.Digest, maxArchiveJSON)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return &layoutImage{blobs: b, desc: d, raw: raw, manifest: m}, nil
}

// layoutImage is an image of a layout in a tar (partial.CompressedImageCore).
type layoutImage struct {
	blobs    tarBlobs
	desc     v1.Descriptor
	raw      []byte
	manifest *v1.Manifest
}

func (i *layoutImage) RawConfigFile() ([]byte, error) {
	return i.blobs.blob(i.manifest.Config.Digest, maxArchiveJSON)
}

func (i *layoutImage) MediaType() (types.MediaType, error) {
	if i.manifest.MediaType != "" {
		return i.manifest.MediaType, nil
	}
	return i.desc.MediaType, nil
}

func (i *layoutImage) RawManifest() ([]byte, error) { return i.raw, nil }

func (i *layoutImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range i.manifest.Layers {
		if l.Digest == h {
			return &layoutLayer{blobs: i.blobs, desc: l}, nil
		}
	}
	return nil, fmt.Errorf("no layer %s in the manifest", h)
}

// layoutLayer is a layer blob of a layout in a tar.
type layoutLayer struct {
	blobs tarBlobs
	desc  v1.Descriptor
}

func (l *layoutLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *layoutLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *layoutLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }

func (l *layoutLayer) Compressed() (io.ReadCloser, error) {
	if err := l.blobs.single(blobName(l.desc.Digest)); err != nil {
		return nil, err
	}
	s, ok := l.blobs.files[blobName(l.desc.Digest)]
	if !ok {
		return nil, fmt.Errorf("%s: not in the archive", blobName(l.desc.Digest))
	}
	return io.NopCloser(io.NewSectionReader(l.blobs.f, s.off, s.size)), nil
}

// layoutIndex is the archive's index.json as an index (ok false where
// the archive is no OCI layout), for the attachments of its images to be
// looked up as in a layout's directory.
func (b tarBlobs) layoutIndex() (idx v1.ImageIndex, ok bool, err error) {
	if _, ok := b.files["oci-layout"]; !ok {
		return nil, false, nil
	}
	if _, ok := b.files["index.json"]; !ok {
		return nil, false, nil
	}
	raw, err := b.read("index.json", maxIndexJSON)
	if err != nil {
		return nil, false, err
	}
	t, err := b.index(raw, "index.json")
	if err != nil {
		return nil, false, err
	}
	return t, true, nil
}

func (b tarBlobs) index(raw []byte, what string) (*tarIndex, error) {
	m, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &tarIndex{blobs: b, raw: raw, manifest: m}, nil
}

// tarIndex is an index of a layout in a tar (v1.ImageIndex), index.json
// or an index blob. Its IndexManifest lists only the manifests whose
// blobs the archive holds: docker save of an image pulled for several
// platforms writes the whole index but the blobs of the platforms it
// has, and the reader is to choose among those, where an image of
// another platform, though named, cannot be read.
type tarIndex struct {
	blobs    tarBlobs
	raw      []byte
	manifest *v1.IndexManifest
}

func (t *tarIndex) MediaType() (types.MediaType, error) {
	if t.manifest.MediaType != "" {
		return t.manifest.MediaType, nil
	}
	return types.OCIImageIndex, nil
}

func (t *tarIndex) Digest() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(t.raw))
	return h, err
}

func (t *tarIndex) Size() (int64, error)         { return int64(len(t.raw)), nil }
func (t *tarIndex) RawManifest() ([]byte, error) { return t.raw, nil }

func (t *tarIndex) IndexManifest() (*v1.IndexManifest, error) {
	m := *t.manifest
	m.Manifests = nil
	for _, d := range t.manifest.Manifests {
		if _, held := t.blobs.files[blobName(d.Digest)]; held {
			m.Manifests = append(m.Manifests, d)
		}
	}
	return &m, nil
}

func (t *tarIndex) Image(h v1.Hash) (v1.Image, error) {
	li, err := t.blobs.image(v1.Descriptor{Digest: h})
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(li)
}

func (t *tarIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	raw, err := t.blobs.blob(h, maxIndexJSON)
	if err != nil {
		return nil, err
	}
	return t.blobs.index(raw, h.String())
}
