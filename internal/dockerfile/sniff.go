package dockerfile

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pallet-dev/pallet/internal/archive"
)

// tarArchive says whether ADD unpacks a local file: as Docker, when its
// content is a tar archive, plain or compressed (gzip, bzip2, xz, zstd:
// BuildKit's DecompressStream), whatever its name. Any other file (a zip,
// a gzipped binary) is copied as it is. pallet unpacks by name, so an
// archive whose name says otherwise is refused here rather than failing
// the build later.
func tarArchive(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(archive.SniffLen)
	format, _ := archive.Sniff(head)
	// Only the first header is read: enough to tell a tar archive, and a
	// bounded read whatever the file (a bzip2 block of a few bytes is
	// 45 MB of output). The window is the one unpacking allows, so that
	// what is taken for an archive here unpacks.
	r, err := archive.Decompress(context.Background(), br, format, archive.Options{Name: file, MaxBytes: 1 << 20})
	if err != nil {
		return false, nil // not a stream we can read: not an archive
	}
	defer r.Close()
	if _, err := tar.NewReader(r).Next(); err != nil && !errors.Is(err, archive.ErrLimit) {
		// The limit is the sniff's, not the archive's: a header checked
		// and long-name or PAX records after it (each up to 1 MiB, and
		// BuildKit reads them all) are a tar so far, which unpacking
		// reads within its own limits.
		return false, nil
	}
	if got, ok := archive.Detect(filepath.Base(file)); !ok || got != format {
		return false, fmt.Errorf("a %s archive whose name does not say so; pallet unpacks archives by name: rename it to end in %s", format, suffixOf(format))
	}
	return true, nil
}

func suffixOf(f archive.Format) string {
	if f == archive.Tar {
		return ".tar"
	}
	return "." + string(f)
}
