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
	"os"
	"path"

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
func (r *Report) dockerLayout(file string, m tarball.Manifest) (ok bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	blobs, err := tarFiles(f)
	if err != nil {
		return false, err
	}
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

// tarBlobs are the regular files of a tar, by clean name: the first of
// each name, as go-containerregistry's tarball package finds it.
type tarBlobs struct {
	f     *os.File
	files map[string]span
}

// tarFiles lists the regular files of the tar f, where their contents
// lie, without reading them: tar.Reader seeks over a file's content, and
// leaves the file at the next entry's.
func tarFiles(f *os.File) (tarBlobs, error) {
	b := tarBlobs{f: f, files: map[string]span{}}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		name := path.Clean(h.Name)
		if _, seen := b.files[name]; seen || h.Typeflag != tar.TypeReg {
			continue
		}
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return b, err
		}
		b.files[name] = span{off, h.Size}
	}
}

// blobName is the name of the blob of digest d in a layout.
func blobName(d v1.Hash) string { return path.Join("blobs", d.Algorithm, d.Hex) }

// read reads the file name whole, refusing one over max bytes.
func (b tarBlobs) read(name string, max int64) ([]byte, error) {
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
	s, ok := l.blobs.files[blobName(l.desc.Digest)]
	if !ok {
		return nil, fmt.Errorf("%s: not in the archive", blobName(l.desc.Digest))
	}
	return io.NopCloser(io.NewSectionReader(l.blobs.f, s.off, s.size)), nil
}
