package layer

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// errEnough stops a layer being written once its headers have been read.
var errEnough = errors.New("read enough")

// A file over 8 GiB does not fit the tar header's 11 octal digits: its
// size goes in a PAX size record, which GNU tar, Python's tarfile and
// archive/tar (hcsshim's and go-winio's backuptar's reader) all take,
// in a Linux layer and a Windows one. The file is sparse and only its
// headers are read: the layer is abandoned before its content.
func TestLayerFileOver8GiBHeader(t *testing.T) {
	const size = 8<<30 + 3
	src := filepath.Join(t.TempDir(), "big.bin")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", int64(size), err)
	}
	f.Close()
	src2 := tree.New()
	if err := src2.Add(tree.Entry{Path: "big.bin", Kind: tree.File, Mode: 0o644, Size: size, Source: src}); err != nil {
		t.Fatal(err)
	}
	img := tree.New()
	if err := img.Place(src2, tree.Placement{Dest: "/data/"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format Format
		name   string
	}{{Linux, "data/big.bin"}, {Windows, "Files/data/big.bin"}} {
		t.Run(tc.format.String(), func(t *testing.T) {
			pr, pw := io.Pipe()
			var raw bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- WriteTar(pw, img.Entries(), Options{Format: tc.format, Epoch: time.Unix(1, 0)})
				pw.Close()
			}()
			tr := tar.NewReader(io.TeeReader(pr, &raw))
			var hdr *tar.Header
			for {
				h, err := tr.Next()
				if err != nil {
					t.Fatalf("no %s in the layer: %v", tc.name, err)
				}
				if h.Name == tc.name {
					hdr = h
					break
				}
			}
			pr.CloseWithError(errEnough)
			if err := <-done; !errors.Is(err, errEnough) {
				t.Errorf("writing the layer: %v, want it stopped by the reader", err)
			}
			if hdr.Size != size {
				t.Errorf("%s: size %d, want %d", tc.name, hdr.Size, int64(size))
			}
			if got := hdr.PAXRecords["size"]; got != strconv.FormatInt(size, 10) {
				t.Errorf("%s: PAX size record %q, want %d", tc.name, got, int64(size))
			}
			// The ustar header itself holds no GNU base-256 size, which
			// only GNU-aware readers take: archive/tar reads headers a
			// block at a time, so the last block read is the file's own.
			b := raw.Bytes()
			ustar := b[len(b)-512:]
			if ustar[124]&0x80 != 0 || string(ustar[257:263]) != "ustar\x00" {
				t.Errorf("%s: size field %q, magic %q: want octal in a ustar header", tc.name, ustar[124:136], ustar[257:265])
			}
		})
	}
}
