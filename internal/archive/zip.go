package archive

import (
	"archive/zip"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"

	"github.com/klauspost/compress/flate"
)

func (x *extractor) extractZip(file *os.File) error {
	fi, err := file.Stat()
	if err != nil {
		return x.fail("%w", err)
	}
	// ErrInsecurePath (GODEBUG zipinsecurepath=0) still returns a usable
	// reader; names are checked per entry below anyway.
	zr, err := zip.NewReader(ctxReaderAt{x.ctx, file}, fi.Size())
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return x.fail("read zip: %w", err)
	}
	// klauspost's inflate is a drop-in for compress/flate and markedly
	// faster on the large binaries release zips carry.
	zr.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser { return flate.NewReader(r) })

	// The central directory gives the count up front: fail before writing.
	if len(zr.File) > x.opt.MaxEntries {
		return x.fail("%w", x.tooManyEntries())
	}
	for _, f := range zr.File {
		e := &entry{
			name:    f.Name,
			slashes: true,
			exact:   true,
			open:    x.meteredOpen(f),
		}
		if f.UncompressedSize64 > math.MaxInt64 {
			// Fail the size check in add without overflowing.
			e.size = math.MaxInt64
		} else {
			e.size = int64(f.UncompressedSize64)
		}
		mode := f.Mode()
		e.exec = mode&0o111 != 0
		switch {
		case mode.IsDir() || strings.HasSuffix(f.Name, `\`):
			e.kind = kindDir
		case mode&fs.ModeSymlink != 0:
			e.kind = kindSymlink
			e.linkInContent = true
		case mode.IsRegular():
			e.kind = kindFile
		default:
			e.kind = kindOther
		}
		if err := x.add(e); err != nil {
			return err
		}
	}
	return nil
}

// meteredOpen charges what an entry decompresses to against MaxBytes.
// Entries that are skipped are never opened, so cost nothing.
func (x *extractor) meteredOpen(f *zip.File) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{meter{rc, x}, rc}, nil
	}
}
