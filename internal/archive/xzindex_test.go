package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestXzDeclared reads what XZ Utils' files, alone and concatenated
// with stream padding, declare they decode to: their real size.
func TestXzDeclared(t *testing.T) {
	seq := int64(len(seqOutput()))
	blocks, mt, empty := readFixture(t, "seq-blocks-crc32.xz"), readFixture(t, "seq-mt-sha256.xz"), readFixture(t, "empty.xz")
	tests := []struct {
		name string
		data []byte
		want int64
	}{
		{"one block", readFixture(t, "seq-crc64.xz"), seq},
		{"blocks", blocks, seq},
		{"sizes in block headers", mt, seq},
		{"check none", readFixture(t, "seq-none-dict4k.xz"), seq},
		{"no blocks", empty, 0},
		{"streams with padding", concat(blocks, make([]byte, 8), empty, mt, make([]byte, 4)), 2 * seq},
	}
	for _, tt := range tests {
		got, err := xzDeclared(bytes.NewReader(tt.data), int64(len(tt.data)))
		if err != nil || got != tt.want {
			t.Errorf("%s: xzDeclared = %d, %v, want %d", tt.name, got, err, tt.want)
		}
		if dec, err := decodeXz(tt.data, DefaultMaxWindow); err != nil || int64(len(dec)) != got {
			t.Errorf("%s: decodes to %d bytes (%v), declares %d", tt.name, len(dec), err, got)
		}
	}
	for _, bad := range []struct {
		name string
		data []byte
	}{
		{"padding not a multiple of 4", concat(blocks, make([]byte, 3))},
		{"trailing garbage", concat(blocks, []byte("junk"))},
		{"cut short", blocks[:len(blocks)-4]},
		{"empty file", nil},
		{"gzip", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"index size lies", func() []byte {
			b := bytes.Clone(empty)
			b[len(b)-7]++ // the footer's backward size, without its CRC
			return b
		}()},
	} {
		n, err := xzDeclared(bytes.NewReader(bad.data), int64(len(bad.data)))
		if err == nil {
			t.Errorf("%s: xzDeclared = %d, want an error", bad.name, n)
		}
		if _, derr := decodeXz(bad.data, DefaultMaxWindow); derr == nil {
			t.Errorf("%s: decodes, and xzDeclared refuses it: %v", bad.name, err)
		} else if bad.name == "gzip" && err.Error() != derr.Error() {
			t.Errorf("%s: xzDeclared says %v, the decoder %v", bad.name, err, derr)
		}
	}
}

// TestXzBombRefusedByItsIndex extracts a small xz file that decodes to
// more than the default MaxBytes: five tar entries of 4 GiB of zeros,
// each within the limit, in 6 MB of file. Its index says so and it must
// be refused at once, not once the decoder has produced 16 GiB (minutes:
// about 9 s a GiB on a loaded two-core machine).
func TestXzBombRefusedByItsIndex(t *testing.T) {
	n := int64(4 * gib)
	var lz []byte
	var size int64
	for i := range 5 {
		h := tarPrefix(t, nil, fmt.Sprintf("zeros%d", i), n)
		lz = concat(lz, lzma2Stored(h), lzma2Zeros(t, n))
		size += int64(len(h)) + n
	}
	s := newSandbox(t, TarXz, xzFile(xzBlock1{lzma2: append(lz, 0), size: size}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := Extract(ctx, s.src, TarXz, s.out, Options{})
	want := fmt.Sprintf("extract %s: archive expands beyond the limit of %d bytes: its xz index declares %d", s.src, DefaultMaxBytes, size)
	if err == nil || err.Error() != want || !errors.Is(err, ErrLimit) {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refused after %v", d)
	}
}

// TestXzIndexThatLiesBoundsDecoding extracts an xz file whose index
// declares 64 KiB of zeros where its block decodes to 1 GiB: decoding
// must stop once it passes what the index declares, not go on to MaxBytes
// or the index.
func TestXzIndexThatLiesBoundsDecoding(t *testing.T) {
	n := int64(gib)
	prefix := tarPrefix(t, nil, "zeros", n)
	data := concat(lzma2Stored(prefix), lzma2Zeros(t, n), []byte{0})
	declared := int64(len(prefix)) + 64<<10
	s := newSandbox(t, TarXz, xzFile(xzBlock1{lzma2: data, size: declared}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := Extract(ctx, s.src, TarXz, s.out, Options{})
	want := `entry "zeros": xz: corrupt input: the file decodes to more than the 66048 bytes its indexes declare`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error = %v\nwant    ...%s", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refused after %v", d)
	}
}

// countingReaderAt counts the reads made of r.
type countingReaderAt struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// TestXzDeclaredPaddingReads reads an xz file ending in 1 MiB of stream
// padding, which the decoder passes at memory speed: xzDeclared must not
// read it four bytes at a time (64 MiB of padding took 9.5 s so).
func TestXzDeclaredPaddingReads(t *testing.T) {
	blocks := readFixture(t, "seq-blocks-crc32.xz")
	for _, pad := range []int{4, 64<<10 - 4, 64 << 10, 1 << 20} {
		data := concat(blocks, make([]byte, pad), blocks, make([]byte, pad))
		c := &countingReaderAt{r: bytes.NewReader(data)}
		got, err := xzDeclared(c, int64(len(data)))
		if want := 2 * int64(len(seqOutput())); err != nil || got != want {
			t.Errorf("%d bytes of padding: xzDeclared = %d, %v, want %d", pad, got, err, want)
		}
		if c.reads > 100 { // 41 for 1 MiB twice; 524,288 four bytes at a time
			t.Errorf("%d bytes of padding: %d reads", pad, c.reads)
		}
	}
}

// TestXzDeclaredStreamsReads reads an xz file of 1 MiB of empty streams,
// each 32 bytes, which the decoder passes at memory speed: xzDeclared
// must not read each stream's footer, index and header apart (16 MiB of
// them took 3.7 s so).
func TestXzDeclaredStreamsReads(t *testing.T) {
	empty := readFixture(t, "empty.xz")
	data := concat(readFixture(t, "seq-blocks-crc32.xz"), bytes.Repeat(empty, (1<<20)/len(empty)))
	c := &countingReaderAt{r: bytes.NewReader(data)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := xzDeclared(c, int64(len(data)))
	runtime.ReadMemStats(&after)
	if want := int64(len(seqOutput())); err != nil || got != want {
		t.Errorf("xzDeclared = %d, %v, want %d", got, err, want)
	}
	if c.reads > 100 { // 19 here; 98,000 and more a stream at a time
		t.Errorf("%d reads", c.reads)
	}
	// A buffer of 4 KiB for each stream's 8-byte index was 128 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("%d bytes allocated for %d streams", alloc, len(data)/len(empty))
	}
}
