package image

import (
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BlobStore keeps blobs by sha256 on disk (pallet's cache does).
type BlobStore interface {
	// Blob is where the blob with this sha256 is, if it is there.
	Blob(sum string) string
	// PutBlob moves src, whose digest the caller checked, in as sum.
	PutBlob(sum, src string) (string, error)
	// TempDir is a directory on the store's file system for a blob being
	// written.
	TempDir() (string, error)
	// FileSHA256 is the digest of a file, remembered while it is untouched.
	FileSHA256(path string) (string, error)
}

// storedImage serves a registry base's layers from a BlobStore, so they
// are downloaded once, not at every build. A blob is put in the store only
// after its digest was checked while downloading, and one found there is
// used only if its digest is still right (else it is fetched again). The
// bytes are the registry's, as they are: compressed or not.
//
// Layers stay mountable from the base's repository, so a push to the same
// registry mounts them instead of uploading them.
type storedImage struct {
	v1.Image
	store BlobStore
	ref   name.Reference
}

func (s *storedImage) Layers() ([]v1.Layer, error) {
	ls, err := s.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for i, l := range ls {
		if out[i], err = s.wrap(l); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *storedImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := s.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return s.wrap(l)
}

func (s *storedImage) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := s.Image.LayerByDiffID(h)
	if err != nil {
		return nil, err
	}
	return s.wrap(l)
}

func (s *storedImage) wrap(l v1.Layer) (v1.Layer, error) {
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	if !mt.IsDistributable() {
		return l, nil // foreign: never fetched, so never stored
	}
	stored, err := partial.CompressedToLayer(&storedBlob{remote: l, store: s.store})
	if err != nil {
		return nil, err
	}
	return &remote.MountableLayer{Layer: stored, Reference: s.ref}, nil
}

// storedBlob is one layer blob of a registry base, read through the store.
type storedBlob struct {
	remote v1.Layer
	store  BlobStore
}

func (b *storedBlob) Digest() (v1.Hash, error)            { return b.remote.Digest() }
func (b *storedBlob) DiffID() (v1.Hash, error)            { return b.remote.DiffID() }
func (b *storedBlob) Size() (int64, error)                { return b.remote.Size() }
func (b *storedBlob) MediaType() (types.MediaType, error) { return b.remote.MediaType() }

func (b *storedBlob) Compressed() (io.ReadCloser, error) {
	d, err := b.remote.Digest()
	if err != nil {
		return nil, err
	}
	path := b.store.Blob(d.Hex)
	if sum, err := b.store.FileSHA256(path); err == nil {
		if sum == d.Hex {
			return os.Open(path)
		}
		os.Remove(path) // damaged: fetch it again
	}
	if err := b.fetch(d.Hex); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// fetch downloads the blob into the store. go-containerregistry checks the
// digest as the blob is read and fails the read at its end if it differs,
// so a blob that is put in is the one the manifest names.
func (b *storedBlob) fetch(sum string) error {
	rc, err := b.remote.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	dir, err := b.store.TempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "blob")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = b.store.PutBlob(sum, tmp)
	return err
}
