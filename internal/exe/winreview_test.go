package exe

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// countingReader is a file of hostile bytes that counts what the decoders
// ask of it: a header that claims huge counts or far offsets must not make
// them read (or allocate) in proportion to the claim.
type countingReader struct {
	r            *bytes.Reader
	reads, bytes int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	c.reads++
	c.bytes += int64(len(b))
	return c.r.ReadAt(b, off)
}

// FuzzDetect feeds detect whatever bytes, with a size that may also lie
// (a file that shrank while being read): it must never panic, must judge
// with what the bounds allow (maxInterp, maxDynamic, maxFatArchs, a PE
// optional header of at most 64 KiB), and an error must say corrupt
// where the file is at fault.
func FuzzDetect(f *testing.F) {
	f.Add(peImage(pe.IMAGE_FILE_MACHINE_AMD64, false), int64(0))
	f.Add(peImage(pe.IMAGE_FILE_MACHINE_I386, true), int64(0))
	f.Add(fatBinary(true, 0x1000, 32, 0x01000007, 0x0100000c), int64(0))
	f.Add([]byte("\x7fELF\x02\x01\x01"), int64(1<<40))
	f.Fuzz(func(t *testing.T, b []byte, extra int64) {
		size := int64(len(b))
		if extra > 0 {
			// A size beyond the bytes: reads past them see EOF.
			size += extra % (1 << 40)
		}
		c := &countingReader{r: bytes.NewReader(b)}
		_, _, err := detect(c, size)
		if err != nil && !errors.Is(err, errCorrupt) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("detect failed with %v, which is neither corrupt nor a short read", err)
		}
		// 4096 DT_NEEDED names of maxInterp bytes each, the worst an
		// ELF file can ask, and the dynamic section and headers besides.
		const bound = 4096*maxInterp + 2*maxDynamic + 70000*64
		if c.bytes > bound {
			t.Errorf("detect asked for %d bytes in %d reads of a %d-byte file claiming %d", c.bytes, c.reads, len(b), size)
		}
	})
}

// TestPEHostileHeaders covers PE files whose headers lie: each is judged
// by the COFF header alone, or refused as corrupt, never read further
// than the fixed headers.
func TestPEHostileHeaders(t *testing.T) {
	good := peImage(pe.IMAGE_FILE_MACHINE_AMD64, false)
	put16 := func(b []byte, off int, v uint16) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint16(b[off:], v)
		return b
	}
	put32 := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	const coff = 0x44 // after the DOS header and the PE signature
	tests := []struct {
		name    string
		data    []byte
		ok      bool
		corrupt bool
	}{
		{"signature offset past the end", put32(good, 0x3c, 0xFFFFFFFF), false, false},
		{"signature offset at the end", put32(good, 0x3c, uint32(len(good)-4)), false, false},
		{"truncated COFF header", good[:coff+10], false, true},
		{"65535 sections", put16(good, coff+2, 0xFFFF), true, false},
		{"optional header of 64 KiB beyond the file", put16(peImage(pe.IMAGE_FILE_MACHINE_I386, true), coff+16, 0xFFFF), true, false},
		{"data directory count huge", put32(peImage(pe.IMAGE_FILE_MACHINE_I386, true), coff+20+92, 0xFFFFFFFF), true, false},
		{"symbol table far away", put32(put32(good, coff+8, 0xFFFFFFF0), coff+12, 0xFFFFFFFF), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &countingReader{r: bytes.NewReader(tt.data)}
			_, ok, err := detect(c, int64(len(tt.data)))
			if ok != tt.ok || (err != nil) != tt.corrupt || (err != nil && !errors.Is(err, errCorrupt)) {
				t.Errorf("detect = %v, %v; want ok %v, corrupt %v", ok, err, tt.ok, tt.corrupt)
			}
			if c.bytes > 1<<16+sniffLen+64 {
				t.Errorf("detect asked for %d bytes of a %d-byte file", c.bytes, len(tt.data))
			}
		})
	}
}
