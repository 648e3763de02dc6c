package archive

import (
	"archive/tar"
	"bufio"
	"errors"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// maxTrailer bounds how much decompressed data past the end of the tar
// stream is read to reach the compressor's checksum.
const maxTrailer = 1 << 20

func (x *extractor) extractTar(file *os.File, f Format) error {
	var r io.Reader = bufio.NewReaderSize(ctxReader{x.ctx, file}, 64<<10)
	switch f {
	case TarGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return x.fail("gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	case TarXz:
		xr, err := xz.NewReader(r)
		if err != nil {
			return x.fail("xz: %w", err)
		}
		r = xr
	case TarZstd:
		// One decoder goroutine is plenty for a single stream and keeps
		// memory predictable on hostile input.
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return x.fail("zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	}

	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return x.fail("read tar: %w", err)
		}
		e := &entry{
			name: hdr.Name,
			exec: hdr.Mode&0o111 != 0,
			link: hdr.Linkname,
			size: hdr.Size,
			open: func() (io.ReadCloser, error) { return io.NopCloser(tr), nil },
		}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeGNUSparse, tar.TypeCont:
			e.kind = kindFile
		case tar.TypeDir:
			e.kind = kindDir
		case tar.TypeSymlink:
			e.kind = kindSymlink
		case tar.TypeLink:
			e.kind = kindHardlink
		case tar.TypeXGlobalHeader:
			// Names of global headers are often absolute temp paths
			// ("/tmp/GlobalHead.1.1"); they carry no file, so only count them.
			if err := x.count(e); err != nil {
				return err
			}
			continue
		default:
			e.kind = kindOther
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
	_, err := io.CopyN(io.Discard, r, maxTrailer)
	switch {
	case err == nil, err == io.EOF:
	case f == TarGzip && errors.Is(err, gzip.ErrHeader):
		// Garbage after a complete gzip member; gzip(1) only warns.
	default:
		return x.fail("after end of tar: %w", err)
	}
	return nil
}
