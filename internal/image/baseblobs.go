package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// BlobStore keeps blobs by sha256 on disk (pallet's cache does).
type BlobStore interface {
	// Blob is where the blob with this sha256 is, if it is there.
	Blob(sum string) string
	// VerifiedBlob is where the blob is if it is there and still hashes
	// to sum (a damaged one is dropped and reported missing).
	VerifiedBlob(sum string) (string, bool)
	// PutBlob moves src, whose digest the caller checked, in as sum.
	PutBlob(sum, src string) (string, error)
	// TempDir is a directory on the store's file system for a blob being
	// written, held until release, called once it is removed.
	TempDir() (dir string, release func(), err error)
}

// storedImage serves a registry base's layers from a BlobStore, so they
// are downloaded once, not at every build. A blob is put in the store only
// after its digest was checked while downloading, and one found there is
// checked again as it is read (see storedBlob.Compressed). The bytes are
// the registry's, as they are: compressed or not.
//
// Layers stay mountable from the base's repository, so a push to the same
// registry mounts them instead of uploading them.
type storedImage struct {
	v1.Image
	store BlobStore
	ref   name.Reference
	// ctx is the build's, which the remote image's requests carry
	// already: a blob fetched again waits out its backoff on it, so
	// that an interrupted build stops at once rather than after it.
	ctx context.Context
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
	stored, err := partial.CompressedToLayer(&storedBlob{remote: l, store: s.store, ctx: s.ctx})
	if err != nil {
		return nil, err
	}
	return &remote.MountableLayer{Layer: stored, Reference: s.ref}, nil
}

// storedBlob is one layer blob of a registry base, read through the store.
type storedBlob struct {
	remote v1.Layer
	store  BlobStore
	ctx    context.Context
}

func (b *storedBlob) Digest() (v1.Hash, error)            { return b.remote.Digest() }
func (b *storedBlob) DiffID() (v1.Hash, error)            { return b.remote.DiffID() }
func (b *storedBlob) Size() (int64, error)                { return b.remote.Size() }
func (b *storedBlob) MediaType() (types.MediaType, error) { return b.remote.MediaType() }

// Compressed serves the stored copy, fetching it first if it is missing or
// damaged. The store checks it against its digest before it is used: by
// its remembered digest while the file's size, times, inode and device are
// unchanged (a byte altered in place changes the ctime), else by reading
// it. A copy found damaged is dropped and fetched again, so the build goes
// on with the right bytes.
func (b *storedBlob) Compressed() (io.ReadCloser, error) {
	d, err := b.remote.Digest()
	if err != nil {
		return nil, err
	}
	size, err := b.remote.Size()
	if err != nil {
		return nil, err
	}
	path, ok := b.store.VerifiedBlob(d.Hex)
	if !ok {
		if err := b.fetch(d.Hex); err != nil {
			return nil, fmt.Errorf("fetch base blob %s: %w", d, err)
		}
		path = b.store.Blob(d.Hex)
	}
	f, err := b.openStored(path, size)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// openStored opens the stored copy if it is there with the right size.
func (b *storedBlob) openStored(path string, size int64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if info.Size() != size {
		f.Close()
		return nil, fmt.Errorf("stored blob %s is %d bytes, not %d: %w", path, info.Size(), size, ErrBlobMismatch)
	}
	return f, nil
}

// fetchRetries is how many times more a base blob whose body broke off is
// fetched, fetchBackoff the wait before the first retry, doubling, as a
// download's (artifact.Fetcher): go-containerregistry retries a request
// that fails, not a body that breaks off once the answer has begun, and
// a base layer of hundreds of MiB cut by one reset failed the build.
var (
	fetchRetries = 3
	fetchBackoff = 500 * time.Millisecond
)

// fetch downloads the blob into the store, again when its body breaks
// off (brokenOff). go-containerregistry checks the digest as the blob is
// read and fails the read at its end if it differs, so a blob that is
// put in is the one the manifest names; a wrong one, a stalled one (the
// watchdog's bound on time) or a disk that fails is not fetched again.
func (b *storedBlob) fetch(sum string) error {
	return transfer.Retry(b.ctx, fetchRetries, fetchBackoff, func() error { return b.fetchOnce(sum) }, brokenOff, nil)
}

// brokenOff says whether err is a body that ended before its length or
// a connection reset while reading it (writing into the store fails
// with neither).
func brokenOff(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func (b *storedBlob) fetchOnce(sum string) error {
	rc, err := b.remote.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	dir, release, err := b.store.TempDir()
	if err != nil {
		return err
	}
	defer release()
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
