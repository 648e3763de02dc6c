package dockerfile

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/pallet-dev/pallet/internal/archive"
)

// tarArchive says whether ADD unpacks a local file: as Docker, when its
// content is a tar archive, plain or compressed, whatever its name. Any
// other file (a zip, a gzipped binary) is copied as it is. pallet unpacks
// by name, so an archive whose name says otherwise is refused here
// rather than failing the build later.
func tarArchive(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(8)
	format, name := archive.Sniff(head)
	var r io.Reader = br
	if name != "" {
		dr, err := decompress(name, br)
		if err != nil {
			return false, nil // not a stream we can read: not an archive
		}
		defer dr.Close()
		r = dr
	}
	// Only the first header is read: enough to tell a tar archive, and a
	// bounded read whatever the file.
	if _, err := tar.NewReader(io.LimitReader(r, 1<<20)).Next(); err != nil {
		return false, nil
	}
	if format == "" {
		return false, fmt.Errorf("a %s-compressed tar archive, which ADD unpacks and pallet cannot: recompress it (gzip, xz or zstd), or unpack it beforehand and COPY the files", name)
	}
	if got, ok := archive.Detect(filepath.Base(file)); !ok || got != format {
		return false, fmt.Errorf("a %s archive whose name does not say so; pallet unpacks archives by name: rename it to end in %s", format, suffixOf(format))
	}
	return true, nil
}

func decompress(name string, r io.Reader) (io.ReadCloser, error) {
	switch name {
	case "gzip":
		return gzip.NewReader(r)
	case "xz":
		x, err := xz.NewReader(r)
		return io.NopCloser(x), err
	case "zstd":
		d, err := zstd.NewReader(r, zstd.WithDecoderMaxMemory(64<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return io.NopCloser(bzip2.NewReader(r)), nil
}

func suffixOf(f archive.Format) string {
	if f == archive.Tar {
		return ".tar"
	}
	return "." + string(f)
}
