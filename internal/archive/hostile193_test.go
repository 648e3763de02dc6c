package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedAtEveryCut: an archive of every format cut short at each of
// many offsets fails naming the archive, or, a plain tar cut at an entry's
// boundary (which tar itself reads as a shorter archive), unpacks a prefix
// of its entries; none panics, hangs or places a file the whole archive
// does not hold.
func TestTruncatedAtEveryCut(t *testing.T) {
	var ents []ent
	whole := map[string]string{}
	for i := range 12 {
		e := ent{name: fmt.Sprintf("d%d/f%d", i%3, i), body: strings.Repeat(fmt.Sprint(i), 700+i*331)}
		ents = append(ents, e)
		whole[e.name] = e.body
	}
	for _, f := range []Format{Tar, TarGzip, TarXz, TarZstd, TarBzip2, Zip} {
		data := build(t, f, ents)
		step := max(len(data)/97, 1)
		for n := 0; n < len(data); n += step {
			dir := t.TempDir()
			src := filepath.Join(t.TempDir(), "a")
			if err := os.WriteFile(src, data[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			err := Extract(context.Background(), src, f, dir, Options{Name: "cut.archive"})
			if err != nil {
				if !strings.Contains(err.Error(), "cut.archive") {
					t.Errorf("%s cut at %d: error names no archive: %v", f, n, err)
				}
				continue
			}
			if f != Tar || n%512 != 0 {
				t.Errorf("%s cut at %d of %d: unpacked without error", f, n, len(data))
			}
			filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				got, _ := os.ReadFile(p)
				if want, ok := whole[filepath.ToSlash(rel)]; !ok || string(got) != want {
					t.Errorf("%s cut at %d: %s holds %d bytes, not the archive's", f, n, rel, len(got))
				}
				return nil
			})
		}
	}
}

// TestTarCutInsidePadding: a tar that ends inside the padding of an
// entry, or right after its content, was read as ending there, cleanly,
// and whatever followed the cut was silently missing; GNU tar and
// Python's tarfile say "Unexpected EOF". A cut at a block boundary
// is a shorter tar to both, and to Extract.
func TestTarCutInsidePadding(t *testing.T) {
	data := tarBytes(t, []ent{{name: "a", body: strings.Repeat("a", 700)}, {name: "b", body: "b"}})
	for _, n := range []int{512 + 700, 1300, 1535} {
		for _, f := range []Format{Tar, TarGzip} {
			sb := newSandbox(t, f, compress(t, f, data[:n])) // the tar is cut, not its compression
			err := Extract(context.Background(), sb.src, f, sb.out, Options{Name: "cut.tar"})
			if err == nil || !strings.Contains(err.Error(), "cut.tar: read tar after entry \"a\": archive cut short") || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s cut at %d: %v, want it refused naming entry a", f, n, err)
			}
		}
	}
	sb := newSandbox(t, Tar, data[:1536])
	if err := Extract(context.Background(), sb.src, Tar, sb.out, Options{}); err != nil {
		t.Errorf("tar cut at the block boundary after entry a: %v", err)
	}
}

// TestEmptyZstdRefused: an empty file read as .tar.zst unpacked to
// nothing, where zstd -d says "unexpected end of file" (an empty .tar.gz
// or .tar.xz is refused by its decoder already).
func TestEmptyZstdRefused(t *testing.T) {
	for _, f := range []Format{TarGzip, TarXz, TarZstd, TarBzip2} {
		sb := newSandbox(t, f, nil)
		err := Extract(context.Background(), sb.src, f, sb.out, Options{Name: "empty.archive"})
		if err == nil || !strings.Contains(err.Error(), "empty.archive") {
			t.Errorf("empty %s: %v, want it refused naming the archive", f, err)
		}
	}
}

// TestZipEntryOverrunningItsDirectory: an entry whose local header and
// central record agree on a size the zip has no room for (a zip64 extra
// declaring 8 GiB for 4 bytes, or a plain size past the directory) is
// refused naming it, where the error named only an offset past the end
// of the file, as "data that is no entry's".
func TestZipEntryOverrunningItsDirectory(t *testing.T) {
	for _, size := range []uint64{1 << 33, 1000} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateRaw(&zip.FileHeader{Name: "big", Method: zip.Store, CompressedSize64: size, UncompressedSize64: size})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("tiny"))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		sb := newSandbox(t, Zip, buf.Bytes())
		err = Extract(context.Background(), sb.src, Zip, sb.out, Options{Name: "z.zip"})
		if want := fmt.Sprintf(`extract z.zip: entry "big": its data as its headers size it (%d bytes compressed`, size); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("size %d: %v, want %q", size, err, want)
		}
		sb.checkContained(t)
	}
}

// TestNamesBounded: the names and link targets of an archive's entries
// take at most namesFloor bytes (256 MiB; or namesPerEntry for each entry
// MaxEntries allows, where that is more), as extraction and the tree
// after it hold them all: names of 4 KiB, as many as MaxEntries allowed,
// held gigabytes. The floor is lowered here to 64 KiB, and MaxEntries
// to 50, which would allow 12,800 bytes.
func TestNamesBounded(t *testing.T) {
	defer func(f int64) { namesFloor = f }(namesFloor)
	namesFloor = 64 << 10
	long := func(i int, kind byte) ent {
		name := strings.Repeat(strings.Repeat("d", 250)+"/", 15) + fmt.Sprintf("%0200d", i)
		if kind == tar.TypeSymlink {
			return ent{name: fmt.Sprint(i), typ: kind, link: name}
		}
		return ent{name: name, body: "x"}
	}
	for _, kind := range []byte{tar.TypeReg, tar.TypeSymlink} {
		var ents []ent
		for i := range 17 { // 17 names of 3965 bytes: 67,405
			ents = append(ents, long(i, kind))
		}
		for _, f := range []Format{TarGzip, Zip} {
			sb := newSandbox(t, f, build(t, f, ents))
			err := Extract(context.Background(), sb.src, f, sb.out, Options{Name: "names", MaxEntries: 50})
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "extract names: entry ") || !strings.Contains(err.Error(), "entry names and link targets take more than 65536 bytes") {
				t.Errorf("%s of 17 names of 4 KiB (%c): %v, want the names refused", f, kind, err)
			}
			sb = newSandbox(t, f, build(t, f, ents[:16]))
			if err := Extract(context.Background(), sb.src, f, sb.out, Options{MaxEntries: 50}); err != nil {
				t.Errorf("%s of 16 names of 4 KiB (%c): %v", f, kind, err)
			}
			// Allowing more entries allows more names, 256 bytes each.
			sb = newSandbox(t, f, build(t, f, ents))
			if err := Extract(context.Background(), sb.src, f, sb.out, Options{MaxEntries: 300}); err != nil {
				t.Errorf("%s of 17 names of 4 KiB (%c), 300 entries allowed: %v", f, kind, err)
			}
		}
	}
}
