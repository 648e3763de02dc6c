package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// sparseZipWriter writes to a file, leaving blocks of zeros as holes: a zip
// of a 4 GiB entry stored so costs no disk.
type sparseZipWriter struct{ f *os.File }

func (w sparseZipWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != 0 {
			return w.f.Write(p)
		}
	}
	if _, err := w.f.Seek(int64(len(p)), io.SeekCurrent); err != nil {
		return 0, err
	}
	return len(p), nil
}

// A zip entry over 4 GiB, whose sizes only zip64 fields hold, is
// extracted with every byte in place, the data past 4 GiB included. The
// entry is stored, mostly zeros: the zip and the extracted file are
// sparse, but the test reads 4 GiB of holes four times: from 10 s to a
// minute of a shared machine, so it runs only with PALLET_BIG=1.
func TestZip64EntryOver4GiB(t *testing.T) {
	if os.Getenv("PALLET_BIG") != "1" {
		t.Skip("set PALLET_BIG=1 to extract a zip entry of 4 GiB")
	}
	const size = 4<<30 + 3<<20
	tail := make([]byte, 1<<20)
	for i := range tail {
		tail[i] = byte(i*7 + i>>8)
	}
	zeros := make([]byte, 1<<20)
	content := func() io.Reader {
		return io.MultiReader(io.LimitReader(zerosReader{}, size-int64(len(tail))), bytes.NewReader(tail))
	}
	crc, want := crc32.NewIEEE(), sha256.New()
	if _, err := io.CopyBuffer(io.MultiWriter(crc, want), content(), zeros); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	src := filepath.Join(dir, "big.zip")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(sparseZipWriter{f})
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "big.bin", Method: zip.Store, CRC32: crc.Sum32(), CompressedSize64: size, UncompressedSize64: size})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyBuffer(w, content(), zeros); err != nil {
		t.Fatal(err)
	}
	if w, err = zw.Create("after.txt"); err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "after\n")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	out, out2 := filepath.Join(dir, "out"), filepath.Join(dir, "out2")
	for _, d := range []string{out, out2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Extract(context.Background(), src, Zip, out, Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.Open(filepath.Join(out, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, got, zeros)
	if err != nil {
		t.Fatal(err)
	}
	if n != size || string(h.Sum(nil)) != string(want.Sum(nil)) {
		t.Errorf("big.bin extracted as %d bytes of sha256 %x, want %d bytes of %x", n, h.Sum(nil), int64(size), want.Sum(nil))
	}
	if b, err := os.ReadFile(filepath.Join(out, "after.txt")); err != nil || string(b) != "after\n" {
		t.Errorf("after.txt, after the large entry: %q, %v", b, err)
	}

	// Below the entry's size the limit refuses it before writing it.
	err = Extract(context.Background(), src, Zip, out2, Options{MaxBytes: 4 << 30})
	if !errors.Is(err, ErrLimit) {
		t.Errorf("extracting with a limit of 4 GiB: %v, want a limit error", err)
	}
}

type zerosReader struct{}

func (zerosReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
