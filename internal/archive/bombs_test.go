package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/klauspost/compress/flate"
)

// Builders for archives that expand to a prefix followed by many zero
// bytes. Compressing gigabytes of zeros would make every test slow, so
// each builder encodes a small unit once and repeats the encoding, which
// the format allows: the decompressed result is the same as compressing
// the whole thing. A tar stream whose last header is followed by zeros is
// complete, as the content, its padding and the end-of-archive marker are
// all zero bytes.

// tarPrefix is a tar stream of ents followed by the header (only) of a
// regular file named name declaring size bytes.
func tarPrefix(t testing.TB, ents []ent, name string, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	b := tarBytes(t, ents)
	buf.Write(b[:len(b)-1024]) // without the end-of-archive marker
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// crcZeros is the CRC-32 of prefix followed by n zero bytes.
func crcZeros(prefix []byte, n int64) uint32 {
	crc := crc32.ChecksumIEEE(prefix)
	zero := make([]byte, 1<<20)
	for ; n > 0; n -= int64(len(zero)) {
		crc = crc32.Update(crc, crc32.IEEETable, zero[:min(n, int64(len(zero)))])
	}
	return crc
}

// deflateZeros is a raw deflate stream of prefix and n zero bytes, n a
// multiple of 256 KiB. Every flushed segment after the first ends on a
// byte boundary and refers only to zeros, so it can be repeated.
func deflateZeros(t testing.TB, prefix []byte, n int64) []byte {
	t.Helper()
	const unit = 256 << 10
	if n < unit || n%unit != 0 {
		t.Fatalf("deflateZeros: %d is not a positive multiple of %d", n, unit)
	}
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, unit)
	fw.Write(prefix)
	fw.Write(zero)
	fw.Flush()
	head := bytes.Clone(buf.Bytes())
	buf.Reset()
	fw.Write(zero)
	fw.Flush()
	repeat := bytes.Clone(buf.Bytes())
	buf.Reset()
	fw.Close()
	return concat(head, bytes.Repeat(repeat, int(n/unit-1)), buf.Bytes())
}

// gzipZeros is a gzip member holding prefix and n zero bytes.
func gzipZeros(t testing.TB, prefix []byte, n int64) []byte {
	t.Helper()
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}
	out = append(out, deflateZeros(t, prefix, n)...)
	out = binary.LittleEndian.AppendUint32(out, crcZeros(prefix, n))
	return binary.LittleEndian.AppendUint32(out, uint32(int64(len(prefix))+n))
}

// zstdWindow128K is a frame header window descriptor for 128 KiB, the
// largest block size, so RLE blocks can be that long.
const zstdWindow128K = 7 << 3

// zstdZeros is a zstd frame holding prefix (at most 128 KiB) in a raw
// block and n zero bytes (a multiple of 128 KiB) in RLE blocks. The frame
// declares the given window descriptor, or, if fcs is non-zero, is a
// single segment frame declaring fcs as its content size (and so its
// window).
func zstdZeros(t testing.TB, prefix []byte, n int64, window byte, fcs uint64) []byte {
	t.Helper()
	const unit = 128 << 10
	if len(prefix) > unit || n%unit != 0 {
		t.Fatalf("zstdZeros: bad sizes %d, %d", len(prefix), n)
	}
	out := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if fcs != 0 {
		out = append(out, 0xe0) // 8-byte content size, single segment
		out = binary.LittleEndian.AppendUint64(out, fcs)
	} else {
		out = append(out, 0x00, window)
	}
	block := func(typ, size uint32, last bool) {
		h := size<<3 | typ<<1
		if last {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
	}
	block(0, uint32(len(prefix)), n == 0)
	out = append(out, prefix...)
	for i := int64(0); i < n/unit; i++ {
		block(1, unit, i == n/unit-1)
		out = append(out, 0)
	}
	return out
}

// xzZeros is an xz file holding prefix and n zero bytes (a multiple of
// 64 KiB) in one block whose header claims dictionary size code dict.
func xzZeros(t testing.TB, prefix []byte, n int64, dict byte) []byte {
	t.Helper()
	data := concat(lzma2Stored(prefix), lzma2Zeros(t, n), []byte{0})
	return xzFile(xzBlock1{dict: dict, lzma2: data, size: int64(len(prefix)) + n})
}

// zerosArchive is a tarball in format f holding prefix and n zero bytes,
// with the decoder window each format uses by default in these tests.
func zerosArchive(t testing.TB, f Format, prefix []byte, n int64) []byte {
	t.Helper()
	switch f {
	case Tar:
		return concat(prefix, make([]byte, n))
	case TarGzip:
		return gzipZeros(t, prefix, n)
	case TarZstd:
		return zstdZeros(t, prefix, n, zstdWindow128K, 0)
	case TarXz:
		return xzZeros(t, prefix, n, 0)
	case TarBzip2:
		return bzip2Zeros(t, prefix, n)
	}
	t.Fatalf("zerosArchive: format %q", f)
	return nil
}

// zipBomb is a zip whose one entry, "zeros", inflates to n bytes.
func zipBomb(t testing.TB, n int64) []byte {
	t.Helper()
	return zipRaw(t, rawEntry{"zeros", deflateZeros(t, nil, n), crcZeros(nil, n), uint64(n)})
}

// lyingZip declares a tiny size for an entry that inflates to n bytes.
func lyingZip(t testing.TB, n int64) []byte {
	t.Helper()
	return zipRaw(t, rawEntry{"liar", deflateZeros(t, nil, n), crcZeros(nil, 10), 10})
}

// rawEntry is a zip entry given as deflated data and the CRC and size
// its headers declare.
type rawEntry struct {
	name     string
	deflated []byte
	crc      uint32
	size     uint64
}

func zipRaw(t testing.TB, entries ...rawEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateRaw(&zip.FileHeader{
			Name:               e.name,
			Method:             zip.Deflate,
			CRC32:              e.crc,
			CompressedSize64:   uint64(len(e.deflated)),
			UncompressedSize64: e.size,
		})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.deflated)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipStoredMany is a zip of n one-byte entries, stored rather than
// deflated: a deflate writer per entry would dominate the test's time.
func zipStoredMany(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range manyEntries(n) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipFlood is a zip whose central directory holds n records of 46 bytes,
// the least one takes, while its end record declares the given count and
// directory size. Each record costs archive/zip a File of some 200 bytes,
// so a small file makes it allocate a lot. archive/zip reads records until
// one is not a record, whatever the end record says, and checks the count
// only modulo 65536, so a count of n%65536 passes it. zip64 writes the
// count and size in a zip64 end record, as writers do past 65535 entries.
func zipFlood(n int, declared, dirSize uint64, zip64 bool) []byte {
	rec := binary.LittleEndian.AppendUint32(nil, 0x02014b50)
	rec = append(rec, make([]byte, 42)...)
	out := bytes.Repeat(rec, n)
	le := binary.LittleEndian
	if zip64 {
		end64 := int64(len(out))
		out = le.AppendUint32(out, 0x06064b50)
		out = le.AppendUint64(out, 44)
		out = le.AppendUint32(out, 0) // versions
		out = le.AppendUint64(out, 0) // disks
		out = le.AppendUint64(out, declared)
		out = le.AppendUint64(out, declared)
		out = le.AppendUint64(out, dirSize)
		out = le.AppendUint64(out, 0) // directory offset
		out = le.AppendUint32(out, 0x07064b50)
		out = le.AppendUint32(out, 0)
		out = le.AppendUint64(out, uint64(end64))
		out = le.AppendUint32(out, 1)
		declared, dirSize = 0xffff, 0xffffffff
	}
	out = le.AppendUint32(out, 0x06054b50)
	out = le.AppendUint32(out, 0) // disks
	out = le.AppendUint16(out, uint16(declared))
	out = le.AppendUint16(out, uint16(declared))
	out = le.AppendUint32(out, uint32(dirSize))
	out = le.AppendUint32(out, 0) // directory offset
	return le.AppendUint16(out, 0)
}

// overlapZip is a zip bomb in the manner of David Fifield's: one local
// file of deflated zeros, size bytes of them, and n central directory
// records that all point at it, named zeros0, zeros1, and so on.
func overlapZip(t testing.TB, n int, size int64) []byte {
	t.Helper()
	le := binary.LittleEndian
	data := deflateZeros(t, nil, size)
	crc := crcZeros(nil, size)
	fields := func(out []byte, name string) []byte {
		out = le.AppendUint16(out, 20) // version needed
		out = le.AppendUint16(out, 0)  // flags
		out = le.AppendUint16(out, 8)  // deflate
		out = le.AppendUint32(out, 0)  // time, date
		out = le.AppendUint32(out, crc)
		out = le.AppendUint32(out, uint32(len(data)))
		out = le.AppendUint32(out, uint32(size))
		return le.AppendUint16(out, uint16(len(name)))
	}
	out := le.AppendUint32(nil, 0x04034b50)
	out = fields(out, "zeros")
	out = le.AppendUint16(out, 0) // extra
	out = append(out, "zeros"...)
	out = append(out, data...)
	dir := len(out)
	for i := range n {
		name := fmt.Sprintf("zeros%d", i)
		out = le.AppendUint32(out, 0x02014b50)
		out = le.AppendUint16(out, 20) // version made by
		out = fields(out, name)
		out = append(out, make([]byte, 12)...) // extra, comment, disk, attributes
		out = le.AppendUint32(out, 0)          // the local header's offset
		out = append(out, name...)
	}
	dirSize := len(out) - dir
	out = le.AppendUint32(out, 0x06054b50)
	out = le.AppendUint32(out, 0)
	out = le.AppendUint16(out, uint16(n))
	out = le.AppendUint16(out, uint16(n))
	out = le.AppendUint32(out, uint32(dirSize))
	out = le.AppendUint32(out, uint32(dir))
	return le.AppendUint16(out, 0)
}

// quotedZip is a zip of stored entries "outer" and "inner" where inner's
// local file, header and data, is the data of outer: the overlap of
// Fifield's "quoted" bombs, in which each entry's data holds the next.
func quotedZip(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	inner := []byte("inner data")
	innerLocal := concat(
		binary.LittleEndian.AppendUint32(nil, 0x04034b50),
		[]byte{20, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(inner)),
		binary.LittleEndian.AppendUint32(nil, uint32(len(inner))),
		binary.LittleEndian.AppendUint32(nil, uint32(len(inner))),
		[]byte{5, 0, 0, 0}, []byte("inner"), inner)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "outer", Method: zip.Store,
		CRC32: crc32.ChecksumIEEE(innerLocal), CompressedSize64: uint64(len(innerLocal)), UncompressedSize64: uint64(len(innerLocal))})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(innerLocal)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	// A second central record, for inner, at outer's data.
	b := buf.Bytes()
	le := binary.LittleEndian
	end := len(b) - 22
	dirSize, dirOff := le.Uint32(b[end+12:]), le.Uint32(b[end+16:])
	rec := slices.Clone(b[dirOff : dirOff+dirSize])
	rec = rec[:46]
	le.PutUint32(rec[16:], crc32.ChecksumIEEE(inner))
	le.PutUint32(rec[20:], uint32(len(inner)))
	le.PutUint32(rec[24:], uint32(len(inner)))
	le.PutUint16(rec[28:], 5)
	le.PutUint16(rec[30:], 0)    // no extra
	le.PutUint32(rec[42:], 30+5) // outer's data: its header and name
	rec = append(rec, "inner"...)
	out := concat(b[:end], rec)
	tail := slices.Clone(b[end:])
	le.PutUint16(tail[8:], 2)
	le.PutUint16(tail[10:], 2)
	le.PutUint32(tail[12:], dirSize+uint32(len(rec)))
	return concat(out, tail)
}
