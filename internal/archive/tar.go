package archive

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// blockSize is tar's record unit: headers and padded content fill whole
// blocks.
const blockSize = 512

// maxTrailer bounds how much decompressed data past the end of the tar
// stream is read to reach the compressor's checksum.
const maxTrailer = 1 << 20

// Decompress returns the stream inside r, compressed as f (Tar, TarGzip,
// TarXz, TarZstd or TarBzip2), held to opt's MaxBytes and MaxWindow as
// Extract holds an archive's: reading past MaxBytes, or a frame claiming
// a window over MaxWindow, fails with an error that wraps ErrLimit. It is
// how a blob that is read rather than extracted (a layer whose diff ID is
// checked) is kept from expanding without end. Close releases the
// decompressor, not r.
func Decompress(ctx context.Context, r io.Reader, f Format, opt Options) (io.ReadCloser, error) {
	switch f {
	case Tar, TarGzip, TarXz, TarZstd, TarBzip2:
	default:
		return nil, fmt.Errorf("decompress %s: unsupported format %q", opt.Name, f)
	}
	if opt.MaxBytes < 0 || opt.MaxWindow < 0 {
		return nil, fmt.Errorf("decompress %s: negative MaxBytes or MaxWindow", opt.Name)
	}
	x := &extractor{ctx: ctx, src: opt.Name, opt: withDefaults(opt), declared: -1}
	out, done, err := x.decompress(r, f)
	if err != nil {
		return nil, err
	}
	return &decompressed{Reader: out, done: done}, nil
}

type decompressed struct {
	io.Reader
	done func()
}

func (d *decompressed) Close() error {
	d.done()
	return nil
}

// decompress returns the decompressed tar stream of file, metered
// against MaxBytes, and a function releasing the decompressor.
func (x *extractor) decompress(file io.Reader, f Format) (io.Reader, func(), error) {
	in := bufio.NewReaderSize(ctxReader{x.ctx, file}, 64<<10)
	var r io.Reader
	done := func() {}
	switch f {
	case Tar:
		r = in
	case TarGzip:
		// gzip's 32 KiB window and bounded header fields need no limit.
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, nil, x.fail("gzip: %w", err)
		}
		r, done = zr, func() { zr.Close() }
	case TarXz:
		r = newXzReader(in, x.opt.MaxWindow)
	case TarZstd:
		// klauspost's decoder reads no input as a stream of no frames,
		// where zstd -d says "unexpected end of file": an empty file
		// would unpack to nothing.
		if _, err := in.Peek(1); err == io.EOF {
			return nil, nil, x.fail("zstd: empty stream: %w", io.ErrUnexpectedEOF)
		}
		zr, err := x.zstdReader(in)
		if err != nil {
			return nil, nil, x.fail("zstd: %w", err)
		}
		r, done = zstdLimit{zr, x.opt.MaxWindow}, zr.Close
	case TarBzip2:
		// The standard library's decoder reads the concatenated streams
		// pbzip2 and lbzip2 write, as bzip2 -d does, and holds one block
		// (900 kB at most) whatever the file says: no window to bound.
		r = bzip2Reader{bzip2.NewReader(in)}
	}
	return meter{r, x}, done, nil
}

// bzip2Reader says that a stream cut short is bzip2's: compress/bzip2
// reports it as a bare unexpected EOF. Its other errors say "bzip2 data
// invalid" already.
type bzip2Reader struct{ r io.Reader }

func (b bzip2Reader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.ErrUnexpectedEOF {
		err = fmt.Errorf("bzip2 stream cut short: %w", err)
	}
	return n, err
}

// bzip2Garbage is what compress/bzip2 says of bytes after a stream that
// start no other: bzip2 -d only warns of them ("trailing garbage after
// EOF ignored"), and so does GNU tar, which pipes through it.
const bzip2Garbage = bzip2.StructuralError("bad magic value in continuation file")

// checkXzIndex refuses an xz file whose indexes declare more than
// MaxBytes before anything is decoded, and holds the decoder to what they
// declare (xzDeclared).
func (x *extractor) checkXzIndex(file *os.File) error {
	fi, err := file.Stat()
	if err != nil {
		return x.fail("%w", err)
	}
	declared, err := xzDeclared(ctxReaderAt{x.ctx, file}, fi.Size())
	if err != nil {
		return x.fail("read tar: %w", err)
	}
	if declared > x.opt.MaxBytes {
		return x.fail("%w", limitErr(settingExtract, fmt.Sprintf("archive expands beyond the limit of %d bytes: its xz index declares %d", x.opt.MaxBytes, declared)))
	}
	x.declared = declared
	return nil
}

// zstdReader bounds the window zstd allocates per frame. One decoder
// goroutine is plenty for a single stream and keeps memory predictable.
func (x *extractor) zstdReader(in io.Reader) (*zstd.Decoder, error) {
	window := uint64(min(max(x.opt.MaxWindow, zstd.MinWindowSize), zstdMaxWindow))
	return zstd.NewReader(in,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(window),
		// For a stream this also bounds the window, including the one a
		// single-segment frame takes from its declared content size.
		zstd.WithDecoderMaxMemory(window),
	)
}

// zstdMaxWindow is the largest window klauspost/compress accepts as a
// limit (the format's own maximum, about 3.75 TiB).
const zstdMaxWindow = 1<<41 + 7<<38

// zstdLimit reports a frame whose window exceeds the limit as a limit
// error saying so. For a stream, zstd returns either error only for that
// (ErrDecoderSizeExceeded when a single-segment frame's content size, its
// window, is too large), and neither message says which limit it was.
type zstdLimit struct {
	r     io.Reader
	limit int64
}

func (z zstdLimit) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		err = limitErr(settingWindow, fmt.Sprintf("zstd frame needs a window larger than the limit of %d bytes", z.limit))
	}
	return n, err
}

func (x *extractor) extractTar(file *os.File, f Format) error {
	if f == TarXz {
		if err := x.checkXzIndex(file); err != nil {
			return err
		}
	}
	r, done, err := x.decompress(file, f)
	if err != nil {
		return err
	}
	defer done()

	tr := tar.NewReader(r)
	var last *entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			// archive/tar takes a stream that ends inside the last
			// entry's padding for one that ends after it, where GNU tar
			// and Python's tarfile say "Unexpected EOF": the entries
			// after the cut are gone without a word. The tar reader
			// reads whole blocks only, and nothing but it has read the
			// stream yet, so the bytes decoded show where it stopped.
			if x.decompressed%blockSize != 0 {
				return x.readErr(last, fmt.Errorf("archive cut short %d bytes into a 512-byte block: %w", x.decompressed%blockSize, io.ErrUnexpectedEOF))
			}
			break
		}
		if err != nil {
			return x.readErr(last, err)
		}
		e := &entry{
			name:     hdr.Name,
			exec:     hdr.Mode&0o111 != 0,
			link:     hdr.Linkname,
			size:     hdr.Size,
			streamed: true,
			open:     func() (io.ReadCloser, error) { return io.NopCloser(tr), nil },
		}
		if x.opt.Headers != nil {
			// Only for a caller that reads it: one allocation less an
			// entry of a 100,000-entry archive otherwise.
			e.header = &Header{Mode: hdr.FileInfo().Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), UID: hdr.Uid, GID: hdr.Gid, Dir: hdr.Typeflag == tar.TypeDir || hdr.Typeflag == typeGNUDumpDir}
		}
		last = e
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeGNUSparse, tar.TypeCont:
			e.kind = kindFile
		case tar.TypeDir, typeGNUDumpDir:
			e.kind = kindDir
		case tar.TypeSymlink:
			e.kind = kindSymlink
		case tar.TypeLink:
			e.kind = kindHardlink
		case tar.TypeXGlobalHeader, typeGNUVolume:
			// Names of global headers are often absolute temp paths
			// ("/tmp/GlobalHead.1.1"), and a volume's is its label (tar
			// -V); they carry no file, so only count them.
			if err := x.count(e); err != nil {
				return err
			}
			continue
		default:
			e.kind, e.other = kindOther, tarTypeName(hdr.Typeflag)
		}
		if err := x.add(e); err != nil {
			return err
		}
	}

	if f == Tar {
		return nil
	}
	// tar stops at its end-of-archive marker, before the compressor's
	// trailer. Reading on verifies the checksum, catching corruption of
	// content already written.
	_, err = io.CopyN(io.Discard, r, maxTrailer)
	switch {
	case err == nil, err == io.EOF:
	case f == TarGzip && errors.Is(err, gzip.ErrHeader):
		// Garbage after a complete gzip member; gzip(1) only warns.
	case f == TarBzip2 && errors.Is(err, bzip2Garbage):
		// Likewise after the last bzip2 stream.
	default:
		return x.fail("after end of tar: %w", err)
	}
	return nil
}

// GNU tar's entry types archive/tar reads but names no constant for.
// A dumpdir is the directory entry of an incremental archive (tar -g):
// its content lists what the directory held, which only an incremental
// restore (tar -x -g) reads; GNU tar and bsdtar unpack it otherwise as
// the directory. A volume header holds the label of tar -V, no file.
const (
	typeGNUDumpDir = 'D'
	typeGNUVolume  = 'V'
)

// readErr reports a failure to read the next tar header. Next also reads
// past whatever of the last entry's content was not consumed, so the error
// (a limit, often) may come from either: name the last entry as the place.
func (x *extractor) readErr(last *entry, err error) error {
	if last == nil {
		return x.fail("read tar: %w", err)
	}
	return x.fail("read tar after entry %s: %w", shownName(last.name), err)
}

// tarTypeName says what a tar entry of a type Extract does not place is.
func tarTypeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}
