// Package layer turns a file tree into an image layer: a deterministic tar
// stream, compressed to a file on disk, exposed as a go-containerregistry
// v1.Layer. The tar format depends on the target platform; Linux and
// Windows layers share everything but the per-entry encoding.
package layer

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/regfile"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Format is the on-disk layout of a layer's tar stream.
type Format int

const (
	// Linux is the plain OCI layer format.
	Linux Format = iota
	// Windows is the format Windows' layer importer expects: Files/ and
	// Hives/ roots and per-entry Windows metadata in PAX records.
	Windows
	// WindowsBase is the first layer of a Windows image, as Microsoft
	// makes the host-process base: a plain tar of Files/, with no Hives/
	// (the importer creates the hives of a base layer itself) and no
	// Windows PAX records.
	WindowsBase
)

func (f Format) String() string {
	switch f {
	case Windows:
		return "windows"
	case WindowsBase:
		return "windows-base"
	}
	return "linux"
}

// Compression is the layer blob compression.
type Compression string

const (
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
)

// ParseCompression reads a --compression value.
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(s); c {
	case Gzip, Zstd:
		return c, nil
	}
	return "", fmt.Errorf("unknown compression %q: want gzip or zstd", s)
}

// Options controls how a layer is written.
type Options struct {
	Format Format
	// Epoch is the timestamp on every entry. Pinning it (from
	// SOURCE_DATE_EPOCH or the recipe) is what makes layers reproducible.
	Epoch       time.Time
	Compression Compression
	// GzipLevel is the deflate level of a gzip layer: 0 is
	// DefaultGzipLevel; LegacyGzipLevel writes what pallet wrote before.
	GzipLevel int
	// Jobs is how many of the layer's blocks are compressed at once
	// (default 1), within the Compressors' bound; a zstd stream is
	// compressed in order, and above 1 only compresses a block while the
	// next is read. The output does not depend on it: blocks have a fixed
	// size.
	Jobs int
	// Expect, when set, gives the sha256 a file's content was known by
	// (the layer's cache key was made from it). Each file is hashed as it
	// is written, and one that differs fails the layer: it changed while
	// the build ran, and the layer must not be stored under that key.
	Expect func(source string) string
	// LinkTarget, for a Windows layer, answers whether an image path is
	// a directory (isDir) and whether the image can tell (known),
	// following links; ImageLinks makes one from all of an image's layer
	// trees. A symlink whose target it calls a directory is written as a
	// directory link, which Windows must know when it creates the link.
	// When nil, only the layer's own entries are known. An unknown target
	// takes the entry's LinkAs, else a file link (UntypedLinks names them).
	LinkTarget func(path string) (isDir, known bool)
	// BaseDir, for a Windows layer, gives the descriptor and attributes
	// of the directory the base holds at an image path, or nil where it
	// holds none with a descriptor. The layer's directory entry there
	// carries them: the Windows union shows the top layer's, and pallet's
	// own (DirectorySDDL) let Users add files where the base may not
	// (C:\Windows\System32). When nil, every directory takes pallet's.
	BaseDir func(path string) *tree.WinDir
	// Known, with Expect, gives the sha256 this build already computed of
	// a file in the status info (its stamp: size, times, inode, device),
	// if it did: when it is the one Expect wants, the file is copied
	// without being hashed again, and must keep that status until it has
	// been read, else the layer fails as for a wrong digest. This is what
	// hashes an input once per build: the cache's Checked gives the
	// digests of files pallet wrote and of files it read once settled.
	Known func(source string, info fs.FileInfo) (string, bool)
	// Compressors bounds the compressors running at once across layers
	// and keeps them for reuse; nil shares one bound, a compressor per
	// CPU, across the process.
	Compressors *Compressors
}

// WriteTar writes the uncompressed tar stream for entries, which must be
// sorted with parents first (tree.Tree.Entries does this).
func WriteTar(w io.Writer, entries []tree.Entry, opt Options) error {
	var enc encoder = linuxEncoder{}
	switch opt.Format {
	case Windows:
		enc = newWindowsEncoder(entries, false, opt)
	case WindowsBase:
		enc = newWindowsEncoder(entries, true, opt)
	}
	return writeTar(w, slices.Values(entries), enc, opt)
}

// writeTree is WriteTar for a tree. A Linux layer walks it: a copy of
// its entries was 13 MB for 100,000 files, held while the layer was
// written. A Windows encoder needs every entry at once.
func writeTree(w io.Writer, t *tree.Tree, opt Options) error {
	if opt.Format == Linux {
		return writeTar(w, t.All(), linuxEncoder{}, opt)
	}
	return WriteTar(w, t.Entries(), opt)
}

// EntryError is a file that a layer cannot hold where it is placed: a
// name Windows cannot create, a whiteout's name, a case collision. The
// placement is at fault, and the caller can name it.
type EntryError struct {
	Path string
	Err  error
}

func (e *EntryError) Error() string { return ShowPath(e.Path) + ": " + e.Err.Error() }

func (e *EntryError) Unwrap() error { return e.Err }

// ShowPath is p as a message shows it: quoted when it is not printable
// UTF-8, so that two names differing only in bytes that print alike (or
// not at all) are told apart.
func ShowPath(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return p
	}
	return strconv.Quote(p)
}

func writeTar(w io.Writer, entries iter.Seq[tree.Entry], enc encoder, opt Options) error {
	tw := tar.NewWriter(w)
	if err := enc.start(tw, opt.Epoch); err != nil {
		return err
	}
	links := newHardLinks(opt)
	for e := range entries {
		hdr, err := enc.header(e, opt.Epoch)
		if err != nil {
			return &EntryError{Path: e.Path, Err: err}
		}
		target := links.target(e)
		if target != "" {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, target, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		if e.Kind == tree.File && target == "" {
			if err := copyFile(tw, e, opt); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// hardLinks finds the files a Linux layer writes as hard links: the later
// names of a file an archive's hard links name several times
// (tree.Entry.Linked), linked to the first the layer writes, which a
// reader has made by then, as BuildKit's layers hold them. Only names
// placed alike (mode, owner) are linked: they share an inode once
// unpacked, and each keeps the mode and owner pallet gives it.
//
// A Windows layer holds copies: the importer takes hard links, but
// archives for Windows are mostly zips, which have none, and pallet's
// Windows checks would need to follow them.
type hardLinks struct {
	first map[hardLinkKey]string
}

type hardLinkKey struct {
	group    *tree.LinkGroup
	mode     fs.FileMode
	uid, gid int
	size     int64
}

func newHardLinks(opt Options) hardLinks {
	if opt.Format != Linux {
		return hardLinks{}
	}
	return hardLinks{first: map[hardLinkKey]string{}}
}

// target is the path e is written as a hard link to, or "" where e is
// written as itself.
func (h hardLinks) target(e tree.Entry) string {
	if h.first == nil || e.Linked == nil || e.Kind != tree.File {
		return ""
	}
	k := hardLinkKey{group: e.Linked, mode: e.Mode, uid: e.UID, gid: e.GID, size: e.Size}
	if p, ok := h.first[k]; ok {
		return p
	}
	h.first[k] = e.Path
	return ""
}

// encoder is the per-format part of a layer: what comes before the entries
// and how one entry becomes a tar header.
type encoder interface {
	start(tw *tar.Writer, epoch time.Time) error
	header(e tree.Entry, epoch time.Time) (*tar.Header, error)
}

type linuxEncoder struct{}

func (linuxEncoder) start(*tar.Writer, time.Time) error { return nil }

func (linuxEncoder) header(e tree.Entry, epoch time.Time) (*tar.Header, error) {
	// Each parent is an entry of its own, checked where it is written.
	if n := len(path.Base(e.Path)); n > maxLinuxName {
		return nil, fmt.Errorf("%.40q... is a name of %d bytes, and Linux file systems hold at most %d in one (NAME_MAX): the runtime fails to unpack the layer", path.Base(e.Path), n, maxLinuxName)
	}
	return baseHeader(e, e.Path, epoch)
}

// maxLinuxName is NAME_MAX, the longest name ext4, xfs, btrfs and
// overlayfs hold in a directory. No name read from a Linux disk or
// unpacked on one is longer, but a destination given in a recipe or a
// Dockerfile may be.
const maxLinuxName = 255

// baseHeader is the format-neutral header: fixed times, numeric owner only,
// no host-dependent fields, so the same tree always gives the same bytes.
func baseHeader(e tree.Entry, name string, epoch time.Time) (*tar.Header, error) {
	if base := path.Base(e.Path); strings.HasPrefix(base, ".wh.") {
		// In a layer, such a name is a whiteout: it would delete a file
		// of the layers below instead of adding one.
		return nil, fmt.Errorf("a name starting with .wh. marks a deletion in an image layer (a whiteout); rename %s", base)
	}
	hdr := &tar.Header{
		Name:    name,
		Mode:    int64(tree.UnixMode(e.Mode)),
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	switch e.Kind {
	case tree.File:
		hdr.Typeflag = tar.TypeReg
		hdr.Size = e.Size
	case tree.Dir:
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case tree.Symlink:
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = e.Link
	default:
		return nil, fmt.Errorf("unsupported entry kind %s", e.Kind)
	}
	return hdr, nil
}

// copyBuffers are the buffers files are copied into the tar through: one
// per layer being written, instead of one per file.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// copyHashes are the hashes files are checked with as they are copied:
// a layer of 100,000 small files made 8 MB of them for the collector.
var copyHashes = sync.Pool{New: func() any { return sha256.New() }}

func copyFile(w io.Writer, e tree.Entry, opt Options) error {
	f, err := regfile.Open(e.Source)
	if err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	defer f.Close()
	var (
		h      hash.Hash
		before fs.FileInfo
		known  bool
	)
	if opt.Expect != nil && opt.Known != nil {
		if before, err = f.Stat(); err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		sum, ok := opt.Known(e.Source, before)
		known = ok && sum == opt.Expect(e.Source)
	}
	if opt.Expect != nil && !known {
		h = copyHashes.Get().(hash.Hash)
		defer copyHashes.Put(h)
		h.Reset()
		w = io.MultiWriter(w, h)
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The size went into the header already; a file that changed since the
	// tree was made would corrupt the tar, so say so instead.
	n, err := io.CopyBuffer(w, io.LimitReader(f, e.Size+1), *buf)
	if errors.Is(err, tar.ErrWriteTooLong) {
		return &EntryError{Path: e.Path, Err: fmt.Errorf("%s grew while being read (it had %d bytes)", e.Source, e.Size)}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	if n != e.Size {
		return &EntryError{Path: e.Path, Err: fmt.Errorf("%s changed size while being read (%d bytes, expected %d)", e.Source, n, e.Size)}
	}
	if known {
		// Only a file left alone while it was read has the content its
		// status before names.
		if after, err := f.Stat(); err != nil || !sameStatus(before, after) {
			return &EntryError{Path: e.Path, Err: &ChangedError{Source: e.Source}}
		}
		return nil
	}
	if h == nil {
		return nil
	}
	var sum [sha256.Size]byte
	var got [2 * sha256.Size]byte
	hex.Encode(got[:], h.Sum(sum[:0]))
	if want := opt.Expect(e.Source); string(got[:]) != want {
		return &EntryError{Path: e.Path, Err: &ChangedError{Source: e.Source, Want: want, Got: string(got[:])}}
	}
	return nil
}

// ChangedError is a file whose content is not the digest the layer's key
// was made of: changed while the build read it, or remembered wrongly.
type ChangedError struct {
	Source string
	// Want and Got are the digests, when the file was hashed.
	Want, Got string
}

func (e *ChangedError) Error() string {
	if e.Want == "" {
		return e.Source + " changed while the build read it; run the build again"
	}
	return fmt.Sprintf("%s changed while the build read it (sha256 %s, then %s); run the build again", e.Source, e.Want, e.Got)
}

// Build writes the layer for t into a new file under dir and returns it. The
// tar stream is hashed and compressed in one pass: nothing is held in
// memory but the blocks being compressed, within opt.Compressors' bound.
func Build(t *tree.Tree, dir string, opt Options) (v1.Layer, error) {
	opt, err := opt.compressing()
	if err != nil {
		return nil, err
	}
	f, err := tempfile.Create(dir, "layer-*.tmp")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	blobHash := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, blobHash)}
	diffHash := sha256.New()

	zw, err := newCompressor(cw, opt)
	if err != nil {
		return nil, fmt.Errorf("%s compressor: %w", opt.Compression, err)
	}
	// A layer that fails half-way gives its compressors back all the same.
	defer zw.abort()
	if err := writeTree(io.MultiWriter(zw, diffHash), t, opt); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("%s compression: %w", opt.Compression, err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	digest := hashOf(blobHash)
	final := filepath.Join(dir, digest.Hex+"."+string(opt.Compression))
	if err := os.Rename(f.Name(), final); err != nil {
		return nil, err
	}
	ok = true
	return &File{Path: final, digest: digest, diffID: hashOf(diffHash), size: cw.n, compression: opt.Compression}, nil
}

// compressor is a layer's compressed stream: Close ends it, abort gives
// back what it holds without ending it (a no-op after Close).
type compressor interface {
	io.WriteCloser
	abort()
}

// compressing is opt with the compression and the compressors a layer
// is written with where opt leaves them out (gzip, the process's shared
// bound), or an error for a compression pallet does not write.
func (opt Options) compressing() (Options, error) {
	if opt.Compression == "" {
		opt.Compression = Gzip
	}
	if opt.Compression != Gzip && opt.Compression != Zstd {
		return opt, fmt.Errorf("unknown compression %q", opt.Compression)
	}
	if opt.Compressors == nil {
		opt.Compressors = shared()
	}
	return opt, nil
}

// NewCompressor is the stream Build compresses a layer's tar with, on
// its own: the bench's physical limit times it over the same bytes
// (pallet's own gzip framing is faster than pgzip, whose bytes it writes,
// so pgzip there overstated how near the limit a build comes).
func NewCompressor(w io.Writer, opt Options) (io.WriteCloser, error) {
	opt, err := opt.compressing()
	if err != nil {
		return nil, err
	}
	return newCompressor(w, opt)
}

// newCompressor starts opt.Compression's stream into w. Level,
// implementation and block size are fixed: any of them changes the blob
// digest of the same tar. Jobs does not: see gzipWriter and zstdWriter.
func newCompressor(w io.Writer, opt Options) (compressor, error) {
	if opt.Compression == Zstd {
		return newZstdWriter(w, opt.Compressors, opt.Jobs)
	}
	return newGzipWriter(w, opt.Compressors, opt.Jobs, opt.GzipLevel)
}

func hashOf(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// File is a compressed layer blob on disk whose digests are already known,
// so serving it costs no rehashing.
type File struct {
	Path string
	// Verified says the blob's content was checked against its digest
	// already (by the cache, which remembers the check while the file is
	// untouched), so reads need not hash it again.
	Verified    bool
	digest      v1.Hash
	diffID      v1.Hash
	size        int64
	compression Compression
}

// Open returns a layer for a blob written earlier by Build (the cache uses
// this), trusting the digests given.
func Open(path string, digest, diffID v1.Hash, size int64, c Compression) *File {
	return &File{Path: path, digest: digest, diffID: diffID, size: size, compression: c}
}

var _ v1.Layer = (*File)(nil)

// Digest is the sha256 of the compressed blob.
func (l *File) Digest() (v1.Hash, error) { return l.digest, nil }

// DiffID is the sha256 of the uncompressed tar.
func (l *File) DiffID() (v1.Hash, error) { return l.diffID, nil }

// Size is the compressed size.
func (l *File) Size() (int64, error) { return l.size, nil }

// Compressed opens the blob. The content is checked against the digest as
// it is read: a cached blob damaged on disk fails the read that uses it,
// instead of ending up in an image under the wrong digest.
func (l *File) Compressed() (io.ReadCloser, error) {
	f, err := os.Open(l.Path)
	if err != nil || l.Verified {
		return f, err
	}
	return &verifier{f: f, h: sha256.New(), want: l.digest, path: l.Path}, nil
}

// BlobPath is where the compressed blob lives, for outputs that can link
// it instead of copying it.
func (l *File) BlobPath() string { return l.Path }

type verifier struct {
	f    *os.File
	h    hash.Hash
	want v1.Hash
	path string
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.f.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := hashOf(v.h); got != v.want {
			return n, fmt.Errorf("layer blob %s is corrupt: sha256 %s, expected %s", v.path, got.Hex, v.want.Hex)
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.f.Close() }

// Uncompressed opens the blob and decompresses it on the fly.
func (l *File) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.Path)
	if err != nil {
		return nil, err
	}
	switch l.compression {
	case Zstd:
		zr, err := zstd.NewReader(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return &readCloser{Reader: zr, close: func() error { zr.Close(); return f.Close() }}, nil
	default:
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return &readCloser{Reader: zr, close: func() error { zr.Close(); return f.Close() }}, nil
	}
}

// DiffIDOf decompresses the blob at path as c and returns the digest of
// the tar in it: what a cache entry's diff ID is checked against.
func DiffIDOf(path string, c Compression) (v1.Hash, error) {
	rc, err := (&File{Path: path, compression: c}).Uncompressed()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("layer blob %s: %w", path, err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return v1.Hash{}, fmt.Errorf("layer blob %s: %w", path, err)
	}
	return hashOf(h), nil
}

// DiffIDWithin is DiffIDOf for a blob from elsewhere (a shared cache),
// whose decompression is held to opt's MaxBytes and MaxWindow
// (archive.Decompress): a small blob that expands to terabytes is
// refused, with an error wrapping archive.ErrLimit, once past them.
func DiffIDWithin(ctx context.Context, path string, c Compression, opt archive.Options) (v1.Hash, error) {
	f := archive.TarGzip
	switch c {
	case Gzip:
	case Zstd:
		f = archive.TarZstd
	default:
		return v1.Hash{}, fmt.Errorf("layer blob %s: compression %q", path, c)
	}
	in, err := os.Open(path)
	if err != nil {
		return v1.Hash{}, err
	}
	defer in.Close()
	opt.Name = path
	rc, err := archive.Decompress(ctx, in, f, opt)
	if err != nil {
		return v1.Hash{}, err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return v1.Hash{}, fmt.Errorf("layer blob %s: %w", path, err)
	}
	return hashOf(h), nil
}

// MediaType is the OCI layer media type for the blob's compression.
func (l *File) MediaType() (types.MediaType, error) {
	if l.compression == Zstd {
		return types.OCILayerZStd, nil
	}
	return types.OCILayer, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }
