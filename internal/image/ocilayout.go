package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// DefaultMaxManifestSize bounds index.json, nested indexes, manifests and
// configs read from an OCI layout base, and configs from a registry
// (containerd's limit for manifests, the one registry manifests get).
// It bounds the config of an image pallet writes too (Assemble), and the
// front ends refuse, at their line, the values that would make a config
// larger: pallet writes no image it would refuse as a base.
const DefaultMaxManifestSize = regauth.MaxManifest

// MaxConfigValue bounds one value pallet writes into an image config (an
// env entry, a label, an argument of the command) once expanded. Real
// values are at most a few KiB (a long PATH, a JSON label); 1 MiB is far
// above them and a quarter of the whole config.
const MaxConfigValue = 1 << 20

// MaxLayers is the most layers an image may have, a base's and pallet's
// together. Linux's overlayfs stacks at most 500 lower directories
// (OVL_MAX_STACK), so no overlay-based runtime mounts a larger image
// (Docker refuses over DockerMaxLayers already), while go-containerregistry's
// appended images take time quadratic in the layers: a base of 20,000
// (a 3 MB manifest) ran for minutes, 2000 took 11 s, 500 take one.
const MaxLayers = 500

// DockerMaxLayers is the most layers an image may have to run on Docker,
// which refuses more (its layer store's maxLayerDepth), the base's
// included: a recipe's own layers are held to it, and a build with a
// base warns past it, where MaxLayers refuses.
const DockerMaxLayers = 125

// MaxIndexDepth is how deep indexes may nest under a layout's index.json.
// Real layouts nest one or two; the bound turns a hostile chain into an
// error instead of unbounded recursion.
const MaxIndexDepth = 8

// layoutReader reads an OCI image layout through go-containerregistry's
// layout.Path, which finds and opens blobs but trusts them; every blob
// read here is checked against the descriptor that names it (digest and
// size), manifests and configs within a size limit.
type layoutReader struct {
	dir   string
	path  layout.Path
	limit int64

	// Each index is searched and each manifest read once, however often
	// the layout names it: duplicate references cannot multiply the work.
	searched map[v1.Hash]bool
	images   map[v1.Hash]*layoutImage

	// passed are what the search passed over, one line each, for a
	// user whose platform none of them is: an image for another
	// platform, an attestation, a manifest in a format pallet does not
	// read.
	passed []string
}

func openLayout(dir string, limit int64) (*layoutReader, error) {
	if limit <= 0 {
		limit = DefaultMaxManifestSize
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout (no index.json)", dir)
	}
	return &layoutReader{dir: dir, path: p, limit: limit, searched: map[v1.Hash]bool{}, images: map[v1.Hash]*layoutImage{}}, nil
}

// rootIndex reads index.json. It has no digest to check; only its size is
// bounded.
func (l *layoutReader) rootIndex() (*v1.IndexManifest, error) {
	// A layout's files are regular files: a pipe would be waited on.
	f, err := bounded.Open(filepath.Join(l.dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", l.dir, err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil {
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("layout %s: index.json is not a regular file (%s)", l.dir, bounded.TypeName(info.Mode()))
		}
		if info.Size() > l.limit {
			return nil, fmt.Errorf("layout %s: index.json is %d bytes, over the %d-byte limit for manifests", l.dir, info.Size(), l.limit)
		}
	}
	b, err := bounded.ReadAll(f, l.limit) // it may have grown since
	var tl *bounded.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Errorf("layout %s: index.json is over the %d-byte limit for manifests", l.dir, l.limit)
	case err != nil:
		return nil, fmt.Errorf("layout %s: index.json: %w", l.dir, err)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("layout %s: index.json: %w", l.dir, err)
	}
	return im, nil
}

func (l *layoutReader) name(kind string, h v1.Hash) string {
	return fmt.Sprintf("%s %s in layout %s", kind, h, l.dir)
}

// open returns a reader of the blob d names that fails unless the blob is
// what d says. A blob of the wrong size fails before anything is read.
func (l *layoutReader) open(d v1.Descriptor, kind string) (io.ReadCloser, error) {
	what := l.name(kind, d.Digest)
	if _, err := hasherFor(d, what); err != nil {
		return nil, err
	}
	rc, err := l.path.Blob(d.Digest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing: no blobs/%s/%s", what, d.Digest.Algorithm, d.Digest.Hex)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if f, ok := rc.(interface{ Stat() (fs.FileInfo, error) }); ok {
		info, err := f.Stat()
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if info.Size() != d.Size {
			rc.Close()
			return nil, fmt.Errorf("%s is %d bytes, not the %d its descriptor gives: %w", what, info.Size(), d.Size, ErrBlobMismatch)
		}
	}
	vr, err := newVerifiedReader(rc, d, what, nil)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return vr, nil
}

// read returns the checked bytes of a manifest, index or config, refusing
// one over the size limit before reading it.
func (l *layoutReader) read(d v1.Descriptor, kind string) ([]byte, error) {
	if d.Size > l.limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for manifests and configs", l.name(kind, d.Digest), d.Size, l.limit)
	}
	rc, err := l.open(d, kind)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc) // at most d.Size+1 bytes: the reader stops there
}

// refNames says which names a layout's index gives its images, for a
// user who asked for another: the first ten, in the index's order.
func refNames(ds []v1.Descriptor) string {
	var names []string
	seen := map[string]bool{}
	for _, d := range ds {
		n := d.Annotations["org.opencontainers.image.ref.name"]
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		names = append(names, strconv.Quote(n))
	}
	switch {
	case len(names) == 0:
		return "it names none of its images"
	case len(names) > 10:
		return fmt.Sprintf("it names %s and %d more", strings.Join(names[:10], ", "), len(names)-10)
	}
	return "it names " + strings.Join(names, ", ")
}

// find returns the images for platform p under the index.json entries
// named refName (all of them if it is empty).
func (l *layoutReader) find(refName string, p platform.Platform) ([]v1.Image, error) {
	im, err := l.rootIndex()
	if err != nil {
		return nil, err
	}
	var candidates []v1.Descriptor
	for _, d := range im.Manifests {
		if refName == "" || d.Annotations["org.opencontainers.image.ref.name"] == refName {
			candidates = append(candidates, d)
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("%s has no image named %q (%s)", l.dir, refName, refNames(im.Manifests))
	}
	var found []rankedImage
	for _, d := range candidates {
		imgs, err := l.matching(d, p, 0)
		if err != nil {
			return nil, err
		}
		found = append(found, imgs...)
	}
	// Only the closest are candidates: an amd64/v3 build takes an
	// amd64/v3 image over a plain amd64 one beside it (platform.Rank).
	best := math.MinInt
	for _, f := range found {
		best = max(best, f.rank)
	}
	var out []v1.Image
	for _, f := range found {
		if f.rank == best {
			out = append(out, f.img)
		}
	}
	return out, nil
}

// rankedImage is an image found for a platform, with its rank
// (platform.Rank).
type rankedImage struct {
	img  v1.Image
	rank int
}

// matching returns the images under d (an image or a nested index) that
// are for platform p. depth is how many indexes are above d, index.json
// not counted.
func (l *layoutReader) matching(d v1.Descriptor, p platform.Platform, depth int) ([]rankedImage, error) {
	switch {
	case d.MediaType.IsIndex():
		return l.matchingIndex(d, p, depth+1)
	case d.MediaType.IsImage():
		var rank int
		if d.Platform != nil {
			var ok bool
			if rank, ok = p.Rank(*d.Platform); !ok {
				l.pass(platform.Name(d.Platform.OS, d.Platform.Architecture, d.Platform.Variant))
				return nil, nil
			}
		}
		img, err := l.image(d)
		if err != nil {
			return nil, err
		}
		if d.Platform == nil {
			cf, err := img.ConfigFile()
			if err != nil {
				return nil, err
			}
			var ok bool
			if rank, ok = p.Rank(v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}); !ok {
				l.pass(platform.Name(cf.OS, cf.Architecture, cf.Variant) + " (by its config)")
				return nil, nil
			}
		}
		return []rankedImage{{img, rank}}, nil
	case isSchema1(d.MediaType):
		l.pass(fmt.Sprintf("%s, a Docker schema 1 manifest (%s), which pallet does not read, nor do current containerd and Docker", d.Digest, d.MediaType))
		return nil, nil
	}
	l.pass(fmt.Sprintf("%s, of media type %q, not an image", d.Digest, d.MediaType))
	return nil, nil // attestations and other artifacts
}

// maxPassed is how many passed-over entries an error lists.
const maxPassed = 10

func (l *layoutReader) pass(what string) {
	if len(l.passed) <= maxPassed && !slices.Contains(l.passed, what) {
		l.passed = append(l.passed, what)
	}
}

// holds says what the search passed over, for an error saying that
// nothing is for the platform asked.
func (l *layoutReader) holds() string { return holding(l.passed, "it holds no image") }

// holding says what an index holds, the first maxPassed of seen, or none
// where seen is empty.
func holding(seen []string, none string) string {
	switch {
	case len(seen) == 0:
		return none
	case len(seen) > maxPassed:
		return "it holds " + strings.Join(seen[:maxPassed], "; ") + "; and more"
	}
	return "it holds " + strings.Join(seen, "; ")
}

// isSchema1 says whether mt is Docker's image manifest schema 1, which
// go-containerregistry reads as neither an image nor an index.
func isSchema1(mt types.MediaType) bool {
	return mt == types.DockerManifestSchema1 || mt == types.DockerManifestSchema1Signed
}

func (l *layoutReader) matchingIndex(d v1.Descriptor, p platform.Platform, depth int) ([]rankedImage, error) {
	// Checked digests already make a loop impossible (a blob cannot hold
	// its own digest); the bound ends any walk regardless.
	if depth > MaxIndexDepth {
		return nil, fmt.Errorf("%s is nested %d indexes deep, more than the %d allowed", l.name("index", d.Digest), depth, MaxIndexDepth)
	}
	if l.searched[d.Digest] {
		return nil, nil // its images are already among those found
	}
	l.searched[d.Digest] = true
	b, err := l.read(d, "index")
	if err != nil {
		return nil, err
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.name("index", d.Digest), err)
	}
	var out []rankedImage
	for _, cd := range im.Manifests {
		imgs, err := l.matching(cd, p, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, imgs...)
	}
	return out, nil
}

// image returns the image whose manifest d names, its manifest checked.
func (l *layoutReader) image(d v1.Descriptor) (v1.Image, error) {
	if li, ok := l.images[d.Digest]; ok {
		return li.image, nil
	}
	raw, err := l.read(d, "manifest")
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.name("manifest", d.Digest), err)
	}
	li := &layoutImage{layout: l, desc: d, raw: raw, manifest: m}
	if li.image, err = partial.CompressedToImage(li); err != nil {
		return nil, err
	}
	l.images[d.Digest] = li
	return li.image, nil
}

// layoutImage is an image of a layout base whose manifest was checked when
// it was read; its config is checked when first read, its layers as they
// are streamed.
type layoutImage struct {
	layout   *layoutReader
	desc     v1.Descriptor
	raw      []byte
	manifest *v1.Manifest
	image    v1.Image // this image, completed by partial

	configOnce sync.Once
	config     []byte
	configErr  error
}

var _ partial.CompressedImageCore = (*layoutImage)(nil)

func (li *layoutImage) MediaType() (types.MediaType, error) { return li.desc.MediaType, nil }
func (li *layoutImage) RawManifest() ([]byte, error)        { return li.raw, nil }

// Descriptor keeps the base's descriptor (platform, annotations), as
// go-containerregistry's layout images do.
func (li *layoutImage) Descriptor() (*v1.Descriptor, error) {
	d := li.desc
	return &d, nil
}

func (li *layoutImage) RawConfigFile() ([]byte, error) {
	li.configOnce.Do(func() {
		li.config, li.configErr = li.layout.read(li.manifest.Config, "config")
	})
	return li.config, li.configErr
}

func (li *layoutImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if h == li.manifest.Config.Digest {
		return &layoutBlob{img: li, desc: li.manifest.Config, kind: "config"}, nil
	}
	for _, d := range li.manifest.Layers {
		if d.Digest == h {
			return &layoutBlob{img: li, desc: d, kind: "layer"}, nil
		}
	}
	return nil, fmt.Errorf("%s has no layer %s", li.layout.name("manifest", li.desc.Digest), h)
}

// layoutBlob is a layer (or the config) of a layout image.
type layoutBlob struct {
	img  *layoutImage
	desc v1.Descriptor
	kind string
}

func (b *layoutBlob) Digest() (v1.Hash, error)            { return b.desc.Digest, nil }
func (b *layoutBlob) Size() (int64, error)                { return b.desc.Size, nil }
func (b *layoutBlob) MediaType() (types.MediaType, error) { return b.desc.MediaType, nil }

// Descriptor keeps a foreign layer's URLs, which outputs write unchanged.
func (b *layoutBlob) Descriptor() (*v1.Descriptor, error) {
	d := b.desc
	return &d, nil
}

// DiffID comes from the config, as for registry bases: a foreign layer's
// blob is not in the layout to be decompressed.
func (b *layoutBlob) DiffID() (v1.Hash, error) {
	return partial.BlobToDiffID(b.img.image, b.desc.Digest)
}

func (b *layoutBlob) Compressed() (io.ReadCloser, error) {
	return b.img.layout.open(b.desc, b.kind)
}
