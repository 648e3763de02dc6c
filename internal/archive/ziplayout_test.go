package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"
)

// storedZip is a zip of stored entries, each given as name and content,
// written by archive/zip with its sizes in the local header (raw), or
// with a data descriptor (descriptor). after, where it holds an entry's
// name, is written right after that entry's data, where no entry claims
// it.
func storedZip(t testing.TB, descriptor bool, after map[string][]byte, ents ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(ents); i += 2 {
		name, body := ents[i], []byte(ents[i+1])
		fh := &zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(body),
			CompressedSize64: uint64(len(body)), UncompressedSize64: uint64(len(body))}
		if descriptor {
			fh.Flags |= zipFlagDescriptor
		}
		w, err := zw.CreateRaw(fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
		if descriptor && after[name] != nil {
			t.Fatal("storedZip: data after an entry with a descriptor")
		}
		w.Write(after[name])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// offsetZip is prefix followed by a zip of stored entries whose offsets
// count the prefix, as zip -A and zip.Writer.SetOffset write a
// self-extracting one.
func offsetZip(t testing.TB, prefix []byte, ents ...string) []byte {
	t.Helper()
	buf := bytes.NewBuffer(bytes.Clone(prefix))
	zw := zip.NewWriter(buf)
	zw.SetOffset(int64(len(prefix)))
	for i := 0; i < len(ents); i += 2 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: ents[i], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(ents[i+1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// localOf is the offset of the local header of the entry named name.
func localOf(t testing.TB, b []byte, name string) int {
	t.Helper()
	sig := binary.LittleEndian.AppendUint32(nil, zipLocalSig)
	for i := 0; ; {
		j := bytes.Index(b[i:], sig)
		if j < 0 {
			t.Fatalf("no local header of %q", name)
		}
		i += j
		n := int(binary.LittleEndian.Uint16(b[i+26:]))
		if string(b[i+30:i+30+n]) == name {
			return i
		}
		i++
	}
}

// patchLocal is a zip with the local header of name patched.
func patchLocal(t testing.TB, name string, patch func(h []byte), b []byte) []byte {
	return patchWith(t, func(b []byte) { patch(b[localOf(t, b, name):]) }, b)
}

// patchWith is a copy of b patched.
func patchWith(t testing.TB, patch func(b []byte), b []byte) []byte {
	out := bytes.Clone(b)
	patch(out)
	return out
}

// TestZipLocalHeadersAgree extracts zips whose local headers say
// something else than the central directory archive/zip reads, hold
// data no entry claims, or hold an entry twice: each must be refused
// before anything is written, naming the entry.
func TestZipLocalHeadersAgree(t *testing.T) {
	le := binary.LittleEndian
	two := func(descriptor bool) []byte {
		return storedZip(t, descriptor, nil, "good", "good data", "other", "other data")
	}
	hidden := storedZip(t, false, nil, "bad!", "hidden data")
	hidden = hidden[:localOf(t, hidden, "bad!")+30+4+len("hidden data")]
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{name: "name",
			data:    patchLocal(t, "good", func(h []byte) { copy(h[30:], "evil") }, two(false)),
			wantErr: `entry "good": its local header says the name is "evil" where the central directory says "good": zip readers differ on which of the two they read, and pallet refuses a zip whose records of an entry disagree`},
		{name: "method",
			data:    patchLocal(t, "other", func(h []byte) { le.PutUint16(h[8:], zip.Deflate) }, two(false)),
			wantErr: `entry "other": its local header says compression method 8 where the central directory says 0: `},
		{name: "encryption",
			data:    patchLocal(t, "good", func(h []byte) { h[6] |= zipEncrypted }, two(false)),
			wantErr: `entry "good": its local header says flags 0x0001 where the central directory says 0x0000: `},
		{name: "CRC",
			data:    patchLocal(t, "good", func(h []byte) { le.PutUint32(h[14:], 0xdeadbeef) }, two(false)),
			wantErr: `entry "good": its local header says CRC-32 deadbeef where the central directory says `},
		{name: "compressed size",
			data:    patchLocal(t, "other", func(h []byte) { le.PutUint32(h[18:], 4) }, two(false)),
			wantErr: `entry "other": its local header says compressed size 4 where the central directory says 10: `},
		{name: "uncompressed size",
			data:    patchLocal(t, "other", func(h []byte) { le.PutUint32(h[22:], 1<<30) }, two(false)),
			wantErr: `entry "other": its local header says uncompressed size 1073741824 where the central directory says 10: `},
		{name: "descriptor's CRC",
			data: patchWith(t, func(b []byte) {
				h := localOf(t, b, "good")
				le.PutUint32(b[h+30+4+len("good data")+4:], 0xdeadbeef) // past the descriptor's signature
			}, two(true)),
			wantErr: `entry "good": its data descriptor, at offset 43, does not hold the CRC-32 and sizes the central directory gives it`},
		{name: "descriptor's size",
			data: patchWith(t, func(b []byte) {
				h := localOf(t, b, "other")
				le.PutUint32(b[h+30+5+len("other data")+12:], 1<<30)
			}, two(true)),
			wantErr: `entry "other": its data descriptor, at offset 104, does not hold the CRC-32 and sizes`},
		{name: "sizes in the local header with a descriptor",
			data:    patchLocal(t, "good", func(h []byte) { le.PutUint32(h[22:], 100) }, two(true)),
			wantErr: `entry "good": its local header says uncompressed size 100 where the central directory says 9: `},
		{name: "junk between entries",
			data:    storedZip(t, false, map[string][]byte{"good": []byte("junk")}, "good", "good data", "other", "other data"),
			wantErr: `the zip holds, at offset 43, data that is no entry's before its central directory: `},
		{name: "junk after the last entry",
			data:    storedZip(t, false, map[string][]byte{"other": []byte("junk")}, "good", "good data", "other", "other data"),
			wantErr: `the zip holds, at offset 88, data that is no entry's before its central directory: `},
		{name: "local file the directory does not list",
			data:    storedZip(t, false, map[string][]byte{"good": hidden}, "good", "good data", "other", "other data"),
			wantErr: `the zip holds a local file "bad!", at offset 43, that its central directory does not list (or lists twice): readers that stream a zip would place it, pallet would not, and it refuses the zip`},
		{name: "a zip in the prefix",
			// archive/zip reads the second zip's directory; a streaming
			// reader meets the first one's entries.
			data:    concat(two(false), storedZip(t, false, nil, "x", "x data")),
			wantErr: `the zip's prefix, the 211 bytes before its first entry, holds a local file header at offset 0: readers that stream a zip would take it for an entry, and pallet refuses the zip`},
	}
	// The name placed may come from a Unicode Path field: a streaming
	// reader takes the local header's.
	var upath bytes.Buffer
	zw := zip.NewWriter(&upath)
	if _, err := zw.CreateHeader(&zip.FileHeader{Name: "caf\x82", Method: zip.Store, NonUTF8: true, Extra: unicodePathField("caf\x82", "cafe")}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		name    string
		data    []byte
		wantErr string
	}{name: "Unicode Path",
		data:    patchLocal(t, "caf\x82", func(h []byte) { copy(h[30+4+9:], "life") }, upath.Bytes()),
		wantErr: `entry "caf\x82": its local header says the Unicode Path name is "life" where the central directory says "cafe": `})
	tests = append(tests, struct {
		name    string
		data    []byte
		wantErr string
	}{name: "UTF-8 flag of a name that is not UTF-8",
		data:    patchLocal(t, "caf\x82", func(h []byte) { h[7] |= zipFlagUTF8 >> 8 }, upath.Bytes()),
		wantErr: `entry "caf\x82": its local header says flags 0x0808 where the central directory says 0x0008: `})
	tests = append(tests, struct {
		name    string
		data    []byte
		wantErr string
	}{name: "a zip in a prefix its offsets count",
		data:    offsetZip(t, concat([]byte("stub"), two(false)), "x", "x data"),
		wantErr: `the zip's prefix, the 215 bytes before its first entry, holds a local file header at offset 4: `})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, Zip, tt.data)
			err := Extract(context.Background(), s.src, Zip, s.out, Options{})
			if want := "extract " + s.src + ": " + tt.wantErr; err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
				t.Errorf("error = %v\nwant    %s...", err, want)
			}
			if files, err := os.ReadDir(s.out); err != nil || len(files) > 0 {
				t.Errorf("extracted %d files (%v)", len(files), err)
			}
		})
	}
}

// TestZipLayoutsWritersMake extracts zips laid out as writers lay them
// out: sizes in the local header or in a data descriptor, with or without
// its signature, with 32- or 64-bit sizes, after a prefix without local
// headers, and an empty one.
func TestZipLayoutsWritersMake(t *testing.T) {
	le := binary.LittleEndian
	// unsigned drops the descriptors' signatures, as some writers write
	// them, moving what follows (the next entries and the directory) back.
	unsigned := func(b []byte) []byte {
		var out []byte
		dirOff := int(le.Uint32(b[len(b)-22+16:]))
		shift := map[int]int{}
		removed := 0
		for _, name := range []string{"good", "other"} {
			h := localOf(t, b, name)
			shift[h] = removed
			d := h + 30 + len(name) + len(name+" data")
			out = append(out, b[h:d]...)
			out = append(out, b[d+4:d+16]...)
			removed += 4
		}
		dir := bytes.Clone(b[dirOff : len(b)-22])
		for p := 0; p < len(dir); {
			off := int(le.Uint32(dir[p+42:]))
			le.PutUint32(dir[p+42:], uint32(off-shift[off]))
			p += 46 + int(le.Uint16(dir[p+28:])) + int(le.Uint16(dir[p+30:])) + int(le.Uint16(dir[p+32:]))
		}
		end := bytes.Clone(b[len(b)-22:])
		le.PutUint32(end[16:], uint32(dirOff-removed))
		return concat(out, dir, end)
	}
	emptyZip := storedZip(t, false, nil)
	tests := []struct {
		name string
		data []byte
		want map[string]int64
	}{
		{name: "sizes in the local header", data: storedZip(t, false, nil, "good", "good data", "other", "other data"),
			want: map[string]int64{"good": 9, "other": 10}},
		{name: "signed data descriptors", data: storedZip(t, true, nil, "good", "good data", "other", "other data"),
			want: map[string]int64{"good": 9, "other": 10}},
		{name: "unsigned data descriptors", data: unsigned(storedZip(t, true, nil, "good", "good data", "other", "other data")),
			want: map[string]int64{"good": 9, "other": 10}},
		{name: "sizes both in the local header and a descriptor",
			data: patchWith(t, func(b []byte) {
				for _, n := range []string{"good", "other"} {
					h := localOf(t, b, n)
					size := uint32(len(n + " data"))
					le.PutUint32(b[h+14:], crc32.ChecksumIEEE([]byte(n+" data")))
					le.PutUint32(b[h+18:], size)
					le.PutUint32(b[h+22:], size)
				}
			}, storedZip(t, true, nil, "good", "good data", "other", "other data")),
			want: map[string]int64{"good": 9, "other": 10}},
		{name: "after a prefix without local headers",
			data: concat(bytes.Repeat([]byte("MZ stub "), 1000), storedZip(t, false, nil, "good", "good data")),
			want: map[string]int64{"good": 9}},
		{name: "after a prefix its offsets count (zip -A, SetOffset)",
			data: offsetZip(t, bytes.Repeat([]byte("MZ stub "), 1000), "good", "good data", "other", "other data"),
			want: map[string]int64{"good": 9, "other": 10}},
		{name: "empty", data: emptyZip, want: map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, Zip, tt.data)
			if err := Extract(context.Background(), s.src, Zip, s.out, Options{}); err != nil {
				t.Fatal(err)
			}
			got := snapshotInfo(t, s.out)
			if len(got) != len(tt.want) {
				t.Fatalf("extracted %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("extracted %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestZipDescriptorForms reads the four forms of a data descriptor
// writers write: with or without a signature, with 32- or 64-bit sizes.
func TestZipDescriptorForms(t *testing.T) {
	le := binary.LittleEndian
	f := &zip.File{FileHeader: zip.FileHeader{CRC32: 0x01020304, CompressedSize64: 7, UncompressedSize64: 9}}
	next := le.AppendUint32(nil, zipLocalSig)
	for _, tt := range []struct {
		name string
		d    []byte
		want int64
	}{
		{"signed, 32-bit", concat(le.AppendUint32(nil, zipDescriptorSig), le.AppendUint32(nil, f.CRC32), le.AppendUint32(nil, 7), le.AppendUint32(nil, 9)), 16},
		{"unsigned, 32-bit", concat(le.AppendUint32(nil, f.CRC32), le.AppendUint32(nil, 7), le.AppendUint32(nil, 9)), 12},
		{"signed, 64-bit", concat(le.AppendUint32(nil, zipDescriptorSig), le.AppendUint32(nil, f.CRC32), le.AppendUint64(nil, 7), le.AppendUint64(nil, 9)), 24},
		{"unsigned, 64-bit", concat(le.AppendUint32(nil, f.CRC32), le.AppendUint64(nil, 7), le.AppendUint64(nil, 9)), 20},
	} {
		n, err := descriptorLen(bytes.NewReader(concat(tt.d, next)), 0, f)
		if err != nil || n != tt.want {
			t.Errorf("%s: descriptorLen = %d, %v, want %d", tt.name, n, err, tt.want)
		}
	}
	if _, err := descriptorLen(bytes.NewReader(concat(le.AppendUint32(nil, f.CRC32), le.AppendUint32(nil, 7), le.AppendUint32(nil, 8))), 0, f); err == nil {
		t.Error("descriptorLen took a descriptor of the wrong size")
	}
}

// TestZipLocalSizes reads a local header's sizes from its zip64 field.
func TestZipLocalSizes(t *testing.T) {
	le := binary.LittleEndian
	extra := concat([]byte{0x55, 0x54, 1, 0, 0}, // an extended timestamp first
		le.AppendUint16(nil, zip64ExtraID), le.AppendUint16(nil, 16), le.AppendUint64(nil, 5<<30), le.AppendUint64(nil, 6<<30))
	if u, c, ok := localSizes(0xffffffff, 0xffffffff, extra); u != 5<<30 || c != 6<<30 || !ok {
		t.Errorf("localSizes both = %d, %d, %v", u, c, ok)
	}
	if u, c, ok := localSizes(0xffffffff, 10, extra); u != 5<<30 || c != 10 || !ok {
		t.Errorf("localSizes uncompressed = %d, %d, %v", u, c, ok)
	}
	if _, _, ok := localSizes(0xffffffff, 0xffffffff, nil); ok {
		t.Error("localSizes found sizes in no zip64 field")
	}
}

// TestWindowReaderAt reads a file through windowReaderAt as through the
// file itself: the same bytes and the same io.EOF, small reads and
// large, at random and walking from the end, past the end too, with
// windows read forwards and backwards.
func TestWindowReaderAt(t *testing.T) {
	data := make([]byte, 3*windowSize+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	file := bytes.NewReader(data)
	for _, back := range []bool{false, true} {
		w := &windowReaderAt{r: file, back: back}
		rng := rand.New(rand.NewPCG(1, 2))
		down := int64(len(data)) + 50
		for i := range 20000 {
			size := rng.IntN(64)
			if rng.IntN(100) == 0 {
				size = windowSize
			}
			off := rng.Int64N(int64(len(data)) + 100)
			if i%2 == 1 {
				// A walk from the end, as xzDeclared's.
				if down -= int64(rng.IntN(200)); down < 0 {
					down = int64(len(data)) + 50
				}
				off = down
			}
			want := make([]byte, size)
			wn, werr := file.ReadAt(want, off)
			got := make([]byte, size)
			gn, gerr := w.ReadAt(got, off)
			if gn != wn || (gerr == nil) != (werr == nil) || !bytes.Equal(got[:gn], want[:wn]) {
				t.Fatalf("back %v: ReadAt(%d bytes, %d) = %d, %v; the file gives %d, %v", back, size, off, gn, gerr, wn, werr)
			}
		}
	}
}
