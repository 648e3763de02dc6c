package archive

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"unicode/utf8"
)

// A zip says what each entry is twice: in its central directory, which
// archive/zip reads (and pallet with it), and in the local header before
// the entry's data, which streaming readers read (bsdtar and unzip from a
// pipe, Java's ZipInputStream, many scanners). archive/zip only finds the
// data's start in the local header: an entry may be named, compressed and
// sized one way there and another in the directory, so that a reviewer's
// tool and pallet place different files from one pinned zip. A zip may
// also hold local files its directory does not list, seen by one kind of
// reader only, and entries whose data overlap, as zip bombs' do (David
// Fifield's "A better zip bomb": many entries of one piece of deflated
// data, each inflated in turn to MaxBytes' worth of output from a few
// KiB).
//
// No writer makes any of these, so pallet takes what both records agree
// on and refuses the rest: checkZipLayout walks the local files from the
// start of the zip (or the end of a self-extracting program before it,
// which may hold no local header) to its central directory, each
// following the last with nothing between them but its data descriptor,
// and requires them
// to be the directory's entries, each once, agreeing with it on name,
// method, encryption, CRC and sizes. It costs reading each entry's local
// header and descriptor, before anything is inflated.

// Layout of a local file header and data descriptor (APPNOTE 4.3.7, 4.3.9).
const (
	zipLocalSig      = 0x04034b50
	zipLocalLen      = 30
	zipDescriptorSig = 0x08074b50
	zipDescriptorMax = 24 // signature, CRC, two 64-bit sizes
	zip64ExtraID     = 0x0001

	// zipFlagsCompared are the general purpose flags both records must
	// agree on: encryption, which readers honour or not by the one they
	// read, and a data descriptor, which says where the next entry starts.
	zipFlagDescriptor = 0x8
	zipFlagsCompared  = zipEncrypted | zipFlagDescriptor
)

// checkZipLayout refuses a zip whose local files are not exactly the
// entries of its central directory, one after the other, as described
// above. starts are where the central directory may begin
// (zipDirectory).
func (x *extractor) checkZipLayout(r io.ReaderAt, files []*zip.File, starts []int64) error {
	// The headers are read in the order they lie in: through a window,
	// a zip of small entries costs a read of the file for hundreds of
	// them, not two or three each (100,000 entries took 330 ms).
	r = &windowReaderAt{r: r}
	// Entries by where their data starts, as archive/zip finds it from
	// the central directory's offset of their local header.
	byData := make(map[int64]*zip.File, len(files))
	for _, f := range files {
		d, err := f.DataOffset()
		if err != nil {
			return x.zipEntryErr(f, "its local header cannot be read: %w", err)
		}
		if prev, ok := byData[d]; ok {
			return x.overlapErr(prev, f)
		}
		byData[d] = f
	}

	type span struct {
		start, end int64 // of the data
		f          *zip.File
	}
	spans := make([]span, 0, len(files))
	// archive/zip reads the offsets of a zip after a prefix (a
	// self-extracting one's program) from the prefix's end, or from the
	// file's start if the directory is found there too: the local files
	// start where the first entry's data shows archive/zip took them to.
	from, dirStart := int64(0), starts[0]
	if len(starts) == 2 {
		base := starts[0] - starts[1]
		if x.localAt(r, base, byData) || !x.localAt(r, 0, byData) {
			from = base
		} else {
			dirStart = starts[1]
		}
	} else if len(byData) > 0 && !x.localAt(r, 0, byData) {
		// A prefix whose length the offsets include, as zip -A and
		// zip.Writer.SetOffset write a self-extracting zip: the local
		// files start at the header of the entry whose data comes first.
		if p, err := firstLocal(r, byData); err != nil {
			return x.fail("read zip: %w", err)
		} else if p > 0 {
			from = p
		}
	}
	if err := x.checkPrefix(r, from); err != nil {
		return err
	}
	p := from
	var h [zipLocalLen]byte
	for {
		if err := x.ctx.Err(); err != nil {
			return x.fail("%w", err)
		}
		n, err := r.ReadAt(h[:], p)
		if n < 4 || binary.LittleEndian.Uint32(h[:]) != zipLocalSig {
			if p == dirStart {
				break
			}
			if err != nil && err != io.EOF {
				return x.fail("read zip: %w", err)
			}
			return x.fail("the zip holds, at offset %d, data that is no entry's before its central directory: readers that stream a zip and those that read its directory would see different files, and pallet refuses it", p)
		}
		if n < zipLocalLen {
			return x.fail("the zip's local header at offset %d is cut short by the end of the file", p)
		}
		f, next, err := x.checkLocal(r, p, h[:], byData)
		if err != nil {
			return err
		}
		if next.after > dirStart {
			// Both records give it sizes the zip has no room for (a zip64
			// extra of 2^62 bytes, a zip cut short): said at the offset
			// the walk then reaches, past the directory or the file, the
			// entry went unnamed.
			return x.zipEntryErr(f, "its data as its headers size it (%d bytes compressed, from offset %d) runs past offset %d, where the central directory starts: the zip is cut short or its sizes are false", f.CompressedSize64, next.data, dirStart)
		}
		spans = append(spans, span{next.data, next.end, f})
		delete(byData, next.data)
		p = next.after
	}
	if len(byData) == 0 {
		return nil
	}
	// What is left is an entry whose local header was never reached: it
	// lies inside another's data, or past the directory's start.
	var left *zip.File
	var d int64 = math.MaxInt64
	for off, f := range byData {
		if off < d {
			d, left = off, f
		}
	}
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end > d })
	if i < len(spans) && spans[i].start <= d {
		return x.overlapErr(spans[i].f, left)
	}
	return x.zipEntryErr(left, "its local header is not among the zip's local files, which end at offset %d, where the central directory starts", p)
}

// localAt reports whether a local header at p starts one of the
// entries archive/zip found.
func (x *extractor) localAt(r io.ReaderAt, p int64, byData map[int64]*zip.File) bool {
	var h [zipLocalLen]byte
	if _, err := r.ReadAt(h[:], p); err != nil || binary.LittleEndian.Uint32(h[:]) != zipLocalSig {
		return false
	}
	return byData[p+zipLocalLen+int64(binary.LittleEndian.Uint16(h[26:]))+int64(binary.LittleEndian.Uint16(h[28:]))] != nil
}

// firstLocal is the offset of the local header of the entry whose data
// comes first, or -1 if none lies before it. The header's extra field,
// which may differ from the directory's, is up to 64 KiB: of the
// headers that end where the data starts, the last is taken, and
// checkPrefix refuses the zip if there is another before it.
func firstLocal(r io.ReaderAt, byData map[int64]*zip.File) (int64, error) {
	d := int64(math.MaxInt64)
	for off := range byData {
		d = min(d, off)
	}
	nameLen := int64(len(byData[d].Name))
	hi := d - zipLocalLen - nameLen // with no extra field
	if hi < 0 {
		return -1, nil
	}
	lo := max(0, hi-math.MaxUint16)
	buf := make([]byte, d-lo)
	if _, err := r.ReadAt(buf, lo); err != nil && err != io.EOF {
		return 0, err
	}
	le := binary.LittleEndian
	for p := hi; p >= lo; p-- {
		h := buf[p-lo:]
		if le.Uint32(h) == zipLocalSig && int64(le.Uint16(h[26:])) == nameLen && int64(le.Uint16(h[28:])) == hi-p {
			return p, nil
		}
	}
	return -1, nil
}

// checkPrefix refuses a prefix (the bytes before the first local file)
// that holds a local header's signature: a reader that streams a zip
// takes the first it meets for an entry, so a prefix could hold a zip of
// its own for those readers. A self-extracting program holds none (Info-ZIP's
// sfx stub spells the signature out in pieces so as not to).
func (x *extractor) checkPrefix(r io.ReaderAt, end int64) error {
	sig := binary.LittleEndian.AppendUint32(nil, zipLocalSig)
	buf := make([]byte, 64<<10)
	for off := int64(0); off < end; off += int64(len(buf) - len(sig) + 1) {
		if err := x.ctx.Err(); err != nil {
			return x.fail("%w", err)
		}
		n, err := r.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if err != nil && err != io.EOF {
			return x.fail("read zip: %w", err)
		}
		if i := bytes.Index(buf[:n], sig); i >= 0 {
			return x.fail("the zip's prefix, the %d bytes before its first entry, holds a local file header at offset %d: readers that stream a zip would take it for an entry, and pallet refuses the zip", end, off+int64(i))
		}
		if off+int64(n) >= end {
			break
		}
	}
	return nil
}

func (x *extractor) overlapErr(a, b *zip.File) error {
	return x.fail("entries %q and %q share compressed data, as a zip bomb's do: pallet refuses a zip whose entries overlap", a.Name, b.Name)
}

func (x *extractor) zipEntryErr(f *zip.File, format string, args ...any) error {
	return x.entryErr(&entry{name: f.Name}, format, args...)
}

// localSpan is where a local file's data is and where the next one starts.
type localSpan struct {
	data, end, after int64
}

// checkLocal reads the local file whose header h is at offset p, finds
// the directory's entry for it and checks that they agree.
func (x *extractor) checkLocal(r io.ReaderAt, p int64, h []byte, byData map[int64]*zip.File) (*zip.File, localSpan, error) {
	le := binary.LittleEndian
	nameLen, extraLen := int64(le.Uint16(h[26:])), int64(le.Uint16(h[28:]))
	varPart := make([]byte, nameLen+extraLen)
	if _, err := r.ReadAt(varPart, p+zipLocalLen); err != nil {
		return nil, localSpan{}, x.fail("the zip's local header at offset %d is cut short by the end of the file", p)
	}
	name, extra := string(varPart[:nameLen]), varPart[nameLen:]
	data := p + zipLocalLen + nameLen + extraLen
	f := byData[data]
	if f == nil {
		return nil, localSpan{}, x.fail("the zip holds a local file %q, at offset %d, that its central directory does not list (or lists twice): readers that stream a zip would place it, pallet would not, and it refuses the zip", name, p)
	}
	disagree := func(what string, local, central any) error {
		return x.zipEntryErr(f, "its local header says %s %v where the central directory says %v: zip readers differ on which of the two they read, and pallet refuses a zip whose records of an entry disagree", what, local, central)
	}
	if name != f.Name {
		return nil, localSpan{}, disagree("the name is", fmt.Sprintf("%q", name), fmt.Sprintf("%q", f.Name))
	}
	// The name placed may come from a Unicode Path field (zipName),
	// which a streaming reader takes from the local header.
	localPath, _ := unicodePathIn(extra, name)
	centralPath, _ := unicodePath(f)
	if localPath != centralPath {
		return nil, localSpan{}, disagree("the Unicode Path name is", fmt.Sprintf("%q", localPath), fmt.Sprintf("%q", centralPath))
	}
	if m := le.Uint16(h[8:]); m != f.Method {
		return nil, localSpan{}, disagree("compression method", m, f.Method)
	}
	flags := le.Uint16(h[6:])
	compared := uint16(zipFlagsCompared)
	if !utf8.ValidString(f.Name) {
		// The UTF-8 flag then says whether the name is code page 437
		// (zipName), to a streaming reader by the local header's.
		compared |= zipFlagUTF8
	}
	if (flags^f.Flags)&compared != 0 {
		return nil, localSpan{}, disagree("flags", fmt.Sprintf("%#04x", flags&compared), fmt.Sprintf("%#04x", f.Flags&compared))
	}
	descriptor := flags&zipFlagDescriptor != 0
	// With a data descriptor the local header may hold zeros, written
	// before the data was: the descriptor holds the values then.
	crc := le.Uint32(h[14:])
	if crc != f.CRC32 && !(descriptor && crc == 0) {
		return nil, localSpan{}, disagree("CRC-32", fmt.Sprintf("%08x", crc), fmt.Sprintf("%08x", f.CRC32))
	}
	usize, csize, ok := localSizes(le.Uint32(h[22:]), le.Uint32(h[18:]), extra)
	for _, s := range []struct {
		what           string
		local, central uint64
	}{{"uncompressed size", usize, f.UncompressedSize64}, {"compressed size", csize, f.CompressedSize64}} {
		switch {
		case s.local == s.central, descriptor && s.local == 0:
		case s.local == math.MaxUint32 && !ok && s.central >= math.MaxUint32:
			// zip64 without the local zip64 field, as archive/zip's
			// CreateRaw writes it: the header only says "large".
		default:
			return nil, localSpan{}, disagree(s.what, s.local, s.central)
		}
	}
	if f.CompressedSize64 > uint64(math.MaxInt64-data-zipDescriptorMax) {
		return nil, localSpan{}, x.zipEntryErr(f, "its compressed size, %d bytes, runs past the end of any file", f.CompressedSize64)
	}
	end := data + int64(f.CompressedSize64)
	after := end
	if descriptor {
		n, err := descriptorLen(r, end, f)
		if err != nil {
			return nil, localSpan{}, x.zipEntryErr(f, "%w", err)
		}
		after += n
	}
	return f, localSpan{data, end, after}, nil
}

// localSizes reads a local header's sizes, from its zip64 extra field
// where one is at its maximum. ok is false if one is at its maximum and
// the header has no zip64 field for it.
func localSizes(usize32, csize32 uint32, extra []byte) (usize, csize uint64, ok bool) {
	le := binary.LittleEndian
	usize, csize, ok = uint64(usize32), uint64(csize32), true
	needU, needC := usize32 == math.MaxUint32, csize32 == math.MaxUint32
	if !needU && !needC {
		return usize, csize, true
	}
	for len(extra) >= 4 {
		id, size := le.Uint16(extra), int(le.Uint16(extra[2:]))
		extra = extra[4:]
		if size > len(extra) {
			break
		}
		field := extra[:size]
		extra = extra[size:]
		if id != zip64ExtraID {
			continue
		}
		// The fields present are those at their maximum, in this order.
		if needU && len(field) >= 8 {
			usize, field, needU = le.Uint64(field), field[8:], false
		}
		if needC && len(field) >= 8 {
			csize, needC = le.Uint64(field), false
		}
		break
	}
	return usize, csize, !needU && !needC
}

// descriptorLen checks the data descriptor at off against f's central
// record and returns its length. Writers differ on whether it has a
// signature and on when its sizes take 64 bits: any of the four forms
// is taken if its CRC and sizes are the entry's.
func descriptorLen(r io.ReaderAt, off int64, f *zip.File) (int64, error) {
	le := binary.LittleEndian
	var b [zipDescriptorMax]byte
	n, err := r.ReadAt(b[:], off)
	if err != nil && err != io.EOF {
		return 0, err
	}
	d := b[:n]
	for _, signed := range []bool{true, false} {
		body := d
		if signed {
			if len(d) < 4 || le.Uint32(d) != zipDescriptorSig {
				continue
			}
			body = d[4:]
		}
		head := int64(len(d) - len(body))
		if len(body) >= 12 && le.Uint32(body) == f.CRC32 &&
			uint64(le.Uint32(body[4:])) == f.CompressedSize64 && uint64(le.Uint32(body[8:])) == f.UncompressedSize64 {
			return head + 12, nil
		}
		if len(body) >= 20 && le.Uint32(body) == f.CRC32 &&
			le.Uint64(body[4:]) == f.CompressedSize64 && le.Uint64(body[12:]) == f.UncompressedSize64 {
			return head + 20, nil
		}
	}
	return 0, fmt.Errorf("its data descriptor, at offset %d, does not hold the CRC-32 and sizes the central directory gives it (%08x, %d and %d bytes)", off, f.CRC32, f.CompressedSize64, f.UncompressedSize64)
}
