package archive

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// The testdata/*.xz files were written by XZ Utils 5.4.1 from the output of
// `seq 1 3000`, so the container parser is checked against the reference
// implementation rather than only against itself:
//
//	seq-crc64.xz         xz -T1 -6 --check=crc64 (one block, 8 MiB dictionary)
//	seq-blocks-crc32.xz  xz -T1 --block-size=4KiB --check=crc32 --lzma2=preset=6,dict=64KiB
//	seq-mt-sha256.xz     xz -T2 --block-size=4KiB --check=sha256 --lzma2=preset=6,dict=64KiB
//	                     (multithreaded: sizes in the block headers)
//	seq-none-dict4k.xz   xz -T1 --check=none --lzma2=dict=4KiB
//	empty.xz             xz < /dev/null (no blocks)
func seqOutput() []byte {
	var b bytes.Buffer
	for i := 1; i <= 3000; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeXz(data []byte, maxDict int64) ([]byte, error) {
	return io.ReadAll(newXzReader(bufio.NewReader(bytes.NewReader(data)), maxDict))
}

func TestXzReaderDecodesXzUtilsOutput(t *testing.T) {
	seq := seqOutput()
	one := readFixture(t, "seq-crc64.xz")
	mt := readFixture(t, "seq-mt-sha256.xz")
	empty := readFixture(t, "empty.xz")
	tests := []struct {
		name string
		data []byte
		want []byte
	}{
		{"one block crc64", one, seq},
		{"blocks crc32", readFixture(t, "seq-blocks-crc32.xz"), seq},
		{"blocks with sizes sha256", mt, seq},
		{"no check 4 KiB dict", readFixture(t, "seq-none-dict4k.xz"), seq},
		{"empty", empty, nil},
		{"two streams with padding", concat(one, make([]byte, 8), mt, make([]byte, 4)), concat(seq, seq)},
		{"empty stream then data", concat(empty, one), seq},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeXz(tt.data, DefaultMaxWindow)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("decoded %d bytes, want %d", len(got), len(tt.want))
			}
			// ulikunitz/xz's own container reader agrees.
			xr, err := xz.NewReader(bytes.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if ref, err := io.ReadAll(xr); err != nil || !bytes.Equal(ref, got) {
				t.Fatalf("xz.Reader disagrees: %d bytes, %v", len(ref), err)
			}
		})
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestXzReaderRejectsDamage flips bits across XZ Utils files and truncates
// them. Whatever xz.Reader rejects must be rejected here too, and nothing
// may decode to wrong data without an error. (Both accept one kind of
// damage: an LZMA2 chunk's packed size made larger than the data the range
// decoder consumes; the checks still cover the output.)
func TestXzReaderRejectsDamage(t *testing.T) {
	seq := seqOutput()
	reference := func(data []byte) error {
		xr, err := xz.NewReader(bytes.NewReader(data))
		if err == nil {
			_, err = io.Copy(io.Discard, xr)
		}
		return err
	}
	for _, name := range []string{"seq-blocks-crc32.xz", "seq-mt-sha256.xz"} {
		data := readFixture(t, name)
		check := func(what string, bad []byte) {
			got, err := decodeXz(bad, DefaultMaxWindow)
			if err != nil {
				return
			}
			if !bytes.Equal(got, seq) {
				t.Errorf("%s: %s decoded to wrong data without an error", name, what)
			}
			if reference(bad) != nil {
				t.Errorf("%s: %s accepted, but xz.Reader refuses it", name, what)
			}
		}
		for i := range len(data) {
			// Headers and the index/footer in full, the compressed data
			// sampled: decoding is the slow part.
			if i < 40 || i >= len(data)-64 || i%53 == 0 {
				bad := bytes.Clone(data)
				bad[i] ^= 0x10
				check(fmt.Sprintf("bit flip at offset %d", i), bad)
			}
		}
		for n := 0; n < len(data); n += 37 {
			if _, err := decodeXz(data[:n], DefaultMaxWindow); err == nil {
				t.Errorf("%s: truncation to %d bytes went unnoticed", name, n)
			}
		}
		for _, pad := range []int{1, 2, 3, 5} {
			if _, err := decodeXz(concat(data, make([]byte, pad)), DefaultMaxWindow); err == nil {
				t.Errorf("%s: stream padding of %d bytes accepted", name, pad)
			}
		}
		if _, err := decodeXz(concat(data, []byte("junk")), DefaultMaxWindow); err == nil {
			t.Errorf("%s: trailing garbage accepted", name)
		}
	}
}

// xzBlock1 is one block for xzFile: LZMA2 data, the dictionary size code
// its header claims, and the size it decodes to (for the index).
type xzBlock1 struct {
	dict  byte
	lzma2 []byte
	size  int64
}

// xzFile writes a single xz stream with check type None around the given
// LZMA2 data, so that tests can claim any dictionary size and build large
// expansions cheaply. TestXzFileHelper checks it against xz.Reader.
func xzFile(blocks ...xzBlock1) []byte {
	var b, index bytes.Buffer
	le32 := func(w *bytes.Buffer, v uint32) { binary.Write(w, binary.LittleEndian, v) }
	flags := []byte{0, 0}
	b.Write(xzMagic)
	b.Write(flags)
	le32(&b, crc32.ChecksumIEEE(flags))
	index.WriteByte(0)
	index.Write(binary.AppendUvarint(nil, uint64(len(blocks))))
	for _, blk := range blocks {
		hdr := []byte{0x02, 0x00, xzLZMA2, 0x01, blk.dict, 0, 0, 0}
		b.Write(hdr)
		le32(&b, crc32.ChecksumIEEE(hdr))
		b.Write(blk.lzma2)
		unpadded := 12 + len(blk.lzma2)
		b.Write(make([]byte, (4-unpadded%4)%4))
		index.Write(binary.AppendUvarint(nil, uint64(unpadded)))
		index.Write(binary.AppendUvarint(nil, uint64(blk.size)))
	}
	index.Write(make([]byte, (4-index.Len()%4)%4))
	le32(&index, crc32.ChecksumIEEE(index.Bytes()))
	b.Write(index.Bytes())
	footer := binary.LittleEndian.AppendUint32(nil, uint32(index.Len()/4-1))
	footer = append(footer, flags...)
	le32(&b, crc32.ChecksumIEEE(footer))
	b.Write(footer)
	b.WriteString("YZ")
	return b.Bytes()
}

// lzma2Stored is LZMA2 data holding data in uncompressed chunks, the
// first resetting the dictionary, without the end marker.
func lzma2Stored(data []byte) []byte {
	var out []byte
	ctrl := byte(0x01)
	for len(data) > 0 {
		n := min(len(data), 64<<10)
		out = append(out, ctrl, byte((n-1)>>8), byte(n-1))
		out = append(out, data[:n]...)
		data = data[n:]
		ctrl = 0x02
	}
	return out
}

// lzma2Zeros is LZMA2 data expanding to n zero bytes (n a multiple of
// 64 KiB) from about n/2000 bytes: one compressed chunk that resets
// everything, repeated, without the end marker.
func lzma2Zeros(t testing.TB, n int64) []byte {
	t.Helper()
	const unit = 64 << 10
	var buf bytes.Buffer
	w, err := lzma.Writer2Config{DictCap: lzma.MinDictCap}.NewWriter2(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, unit))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	chunk := buf.Bytes()
	chunk = chunk[:len(chunk)-1] // the end marker
	if chunk[0] != 0xe0 || 6+int(binary.BigEndian.Uint16(chunk[3:]))+1 != len(chunk) {
		t.Fatalf("lzma2 encoder wrote an unexpected chunk layout: % x", chunk[:6])
	}
	if n%unit != 0 {
		t.Fatalf("lzma2Zeros: %d is not a multiple of %d", n, unit)
	}
	return bytes.Repeat(chunk, int(n/unit))
}

func TestXzFileHelper(t *testing.T) {
	head := []byte("header bytes")
	data := xzFile(
		xzBlock1{dict: 0, lzma2: append(lzma2Stored(head), 0), size: int64(len(head))},
		xzBlock1{dict: 8, lzma2: append(lzma2Zeros(t, 256<<10), 0), size: 256 << 10},
	)
	want := concat(head, make([]byte, 256<<10))
	xr, err := xz.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := io.ReadAll(xr); err != nil || !bytes.Equal(ref, want) {
		t.Fatalf("xz.Reader: %d bytes, %v", len(ref), err)
	}
	if got, err := decodeXz(data, DefaultMaxWindow); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("xzReader: %d bytes, %v", len(got), err)
	}
}

func TestXzReaderDictionaryLimit(t *testing.T) {
	data := readFixture(t, "seq-crc64.xz") // 8 MiB dictionary
	if _, err := decodeXz(data, 8<<20); err != nil {
		t.Fatalf("a dictionary at the limit was refused: %v", err)
	}
	_, err := decodeXz(data, 8<<20-1)
	want := "xz block 1 needs a 8388608-byte dictionary, more than the limit of 8388607 bytes"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if !errors.Is(err, ErrLimit) {
		t.Errorf("%v does not match ErrLimit", err)
	}
}
