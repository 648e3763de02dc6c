package archive

import (
	"archive/zip"
	"bufio"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/flate"
)

func (x *extractor) extractZip(file *os.File) error {
	fi, err := file.Stat()
	if err != nil {
		return x.fail("%w", err)
	}
	in := ctxReaderAt{x.ctx, file}
	starts, declared, err := x.checkZipDirectory(in, fi.Size())
	if err != nil {
		return err
	}
	// ErrInsecurePath (GODEBUG zipinsecurepath=0) still returns a usable
	// reader; names are checked per entry below anyway.
	zr, err := zip.NewReader(in, fi.Size())
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, zip.ErrFormat) {
		// archive/zip reads directory records until one is not, and says
		// only this where their number is not the one the end record
		// declares.
		return x.fail("read zip: its central directory does not hold the %d entries its end record declares (the zip is damaged or cut short): %w", declared, err)
	}
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return x.fail("read zip: %w", err)
	}
	// klauspost's inflate is a drop-in for compress/flate and markedly
	// faster on the large binaries release zips carry.
	zr.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser { return flate.NewReader(r) })
	// 7-Zip (-mm=BZip2) and Info-ZIP (zip -Z bzip2) write bzip2, which
	// unzip and bsdtar read. Its blocks are 900 kB at most, so it needs
	// no window limit; MaxBytes meters its output as any entry's.
	zr.RegisterDecompressor(zipBzip2, func(r io.Reader) io.ReadCloser { return io.NopCloser(bzip2.NewReader(r)) })

	// checkZipDirectory has counted these records already, unless it and
	// archive/zip have come to disagree on where they start: fail before
	// writing anyway.
	if len(zr.File) > x.opt.MaxEntries {
		return x.fail("%w", x.tooManyEntries())
	}
	if err := x.checkZipLayout(in, zr.File, starts); err != nil {
		return err
	}
	// A zip has no order in which a later entry replaces an earlier one
	// (a tar's is its appends), and readers differ on which of two
	// entries of one name they take: two of a name, unless both are
	// directories, are refused rather than one of them chosen.
	type seenName struct {
		name string
		dir  bool
	}
	seen := make(map[string]seenName, len(zr.File))
	for _, f := range zr.File {
		name := zipName(f)
		e := &entry{
			name:    name,
			slashes: backslashSeparates(f, name),
			exact:   true,
			open:    x.meteredOpen(f),
		}
		if f.UncompressedSize64 > math.MaxInt64 {
			// Fail the size check in add without overflowing.
			e.size = math.MaxInt64
		} else {
			e.size = int64(f.UncompressedSize64)
		}
		mode := f.Mode()
		e.exec = mode&0o111 != 0
		switch {
		case mode.IsDir() || e.slashes && strings.HasSuffix(f.Name, `\`):
			e.kind = kindDir
		case mode&fs.ModeSymlink != 0:
			e.kind = kindSymlink
			e.linkInContent = true
		case mode.IsRegular():
			e.kind = kindFile
		default:
			e.kind, e.other = kindOther, "zip entry of mode "+mode.String()
		}
		if parts, err := splitName(e.name, e.slashes); err == nil && e.kind != kindOther {
			key := strings.Join(parts, "/")
			if prev, ok := seen[key]; ok && (!prev.dir || e.kind != kindDir) {
				return x.entryErr(e, "the zip holds this name twice (also as %q), and zip readers differ on which they take: pallet does not choose", prev.name)
			}
			seen[key] = seenName{e.name, e.kind == kindDir}
		}
		if err := x.add(e); err != nil {
			return err
		}
	}
	return nil
}

// zipName is the name of a zip entry as the zip format, Python's zipfile
// and Windows (in its OEM code page, 437 on an English system) read it.
// Without the UTF-8 flag (general purpose bit 11) a name is in the IBM
// PC code page 437 (APPNOTE appendix D), and Windows tools (the
// Explorer, PowerShell 5's Compress-Archive, .NET before 4.6.1) wrote
// their OEM code page so: "café" as "caf\x82", no UTF-8 at all, which a
// Windows layer cannot hold and a Linux one would hold as bytes no one
// wrote. Info-ZIP on Unix writes UTF-8 without the flag, though, and
// Unix systems other encodings: only a name made on MS-DOS or Windows
// (the creator's system, as unzip tells them) that is not valid UTF-8 is
// read as code page 437. Other names are kept as the archive holds them,
// as bsdtar keeps them. An Info-ZIP Unicode Path field, which unzip
// reads, wins over both (unicodePath).
func zipName(f *zip.File) string {
	if f.Flags&zipFlagUTF8 != 0 {
		return f.Name
	}
	if name, ok := unicodePath(f); ok {
		return name
	}
	if utf8.ValidString(f.Name) {
		return f.Name
	}
	if !madeOnWindows(f) {
		return f.Name
	}
	return decodeCP437(f.Name)
}

// cp437High is the upper half of code page 437, the characters of bytes
// 0x80 to 0xFF in order; its lower half is ASCII. Written here rather
// than taken from golang.org/x/text/encoding/charmap, whose init (every
// code page's tables, 0.08 ms) every pallet command paid for this one.
const cp437High = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0"

// cp437HighRunes is cp437High indexed by byte - 0x80: decoded once, not
// for every name of a zip.
var cp437HighRunes = []rune(cp437High)

// decodeCP437 reads s as code page 437, where every byte is a character.
func decodeCP437(s string) string {
	high := cp437HighRunes
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x80 {
			b.WriteByte(c)
		} else {
			b.WriteRune(high[c-0x80])
		}
	}
	return b.String()
}

// unicodePath is the name an Info-ZIP Unicode Path extra field (0x7075,
// APPNOTE 4.6.9) of the central directory gives an entry whose header
// name is in a code page (checkLocal requires the local header's field
// to say the same). Info-ZIP on Windows and WinZip write the name in
// the system's OEM code page (866 for Russian, 932 for Japanese, not
// only 437) and its UTF-8 here, which unzip and bsdtar take. The field is
// taken only while it is for the name the header holds (its CRC-32 of
// that name matches), as the format says: a tool that renamed the entry
// without knowing the field left it stale.
func unicodePath(f *zip.File) (string, bool) {
	return unicodePathIn(f.Extra, f.Name)
}

// unicodePathIn is the name the Unicode Path field in extra gives the
// header name raw, if it holds one for raw.
func unicodePathIn(extra []byte, raw string) (string, bool) {
	le := binary.LittleEndian
	for len(extra) >= 4 {
		tag, size := le.Uint16(extra), int(le.Uint16(extra[2:]))
		if len(extra) < 4+size {
			return "", false
		}
		field := extra[4 : 4+size]
		extra = extra[4+size:]
		if tag != zipUnicodePathID || len(field) < 5 || field[0] != 1 {
			continue
		}
		name := field[5:]
		if le.Uint32(field[1:]) != crc32.ChecksumIEEE([]byte(raw)) || len(name) == 0 || !utf8.Valid(name) {
			return "", false
		}
		return string(name), true
	}
	return "", false
}

// zipUnicodePathID is the tag of Info-ZIP's Unicode Path extra field.
const zipUnicodePathID = 0x7075

// backslashSeparates says whether a '\' in the zip entry name separates
// directories, as unzip reads it: in a name written on MS-DOS or Windows
// (the creator system the zip records) that holds no '/' (PowerShell 5's
// Compress-Archive and .NET before 4.6.1 wrote "bin\x.dll" so). A zip
// made on Unix may hold a '\' as a character of a name, as a tar does
// (systemd's system-systemd\x2dcryptsetup.slice), and unzip keeps it so.
func backslashSeparates(f *zip.File, name string) bool {
	return madeOnWindows(f) && !strings.Contains(name, "/")
}

// madeOnWindows says whether the zip records f as written on MS-DOS,
// OS/2 or Windows, the systems of OEM code pages and '\' separators.
func madeOnWindows(f *zip.File) bool {
	switch f.CreatorVersion >> 8 {
	case zipFAT, zipHPFS, zipNTFS, zipVFAT:
		return true
	}
	return false
}

// zipFlagUTF8 is the general purpose flag of a name in UTF-8 (bit 11).
const zipFlagUTF8 = 0x800

// The creator systems of APPNOTE 4.4.2.2 on which zips were written in
// an OEM code page.
const (
	zipFAT  = 0
	zipHPFS = 6
	zipNTFS = 11
	zipVFAT = 14
)

// errEncrypted is the error of an encrypted zip entry. archive/zip
// ignores the flag and reads the ciphertext as content: a real entry then
// fails its size or checksum check with a message that says nothing of
// why, and one whose header claims no CRC, or the ciphertext's size, would
// be placed as the file.
var errEncrypted = errors.New("encrypted, and pallet does not decrypt archives")

// zipBzip2 is bzip2's compression method (APPNOTE 4.4.5).
const zipBzip2 = 12

// zipMethods are the compression methods pallet unpacks.
var zipMethods = map[uint16]bool{zip.Store: true, zip.Deflate: true, zipBzip2: true}

// zipOtherMethods names methods it does not, which 7-Zip's -mm= and other
// tools write, for the error: archive/zip says only "unsupported
// compression algorithm".
var zipOtherMethods = map[uint16]string{
	9: "Deflate64", 14: "LZMA", 93: "zstd", 95: "xz", 96: "JPEG", 97: "WavPack", 98: "PPMd", 99: "AES encryption",
}

// unsupportedMethod says which method an entry is compressed with, and
// what pallet reads instead.
func unsupportedMethod(m uint16) error {
	name, ok := zipOtherMethods[m]
	if !ok {
		name = "an unknown method"
	}
	return fmt.Errorf("compressed with %s (zip method %d), which pallet does not unpack: it reads stored, deflate and bzip2 entries (repack the zip with one of those)", name, m)
}

// zipEncrypted is the general purpose flag of an encrypted entry (bit 6,
// strong encryption, comes with it).
const zipEncrypted = 0x1

// meteredOpen charges what an entry decompresses to against MaxBytes.
// Entries that are skipped are never opened, so cost nothing.
func (x *extractor) meteredOpen(f *zip.File) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		if f.Flags&zipEncrypted != 0 {
			return nil, errEncrypted
		}
		if !zipMethods[f.Method] {
			return nil, unsupportedMethod(f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{meter{rc, x}, rc}, nil
	}
}

// checkZipDirectory refuses a zip whose central directory holds more
// records than MaxEntries before archive/zip reads them. archive/zip
// keeps a File of a few hundred bytes for each record, and a record takes
// as little as 46 bytes of the file: 3 million of them cost over 700 MB
// before the count could be checked. What the end record declares does
// not bound this: archive/zip reads records until it meets something
// else, whatever size the directory declares, and compares their number
// with the declared count only modulo 65536. So the records are counted
// here first, from where archive/zip will start, stopping one past the
// limit. archive/zip then holds at most MaxEntries Files, plus the names,
// extra fields and comments, which it copies from the file about twice:
// that part is bounded by the file's size, which the download limits
// bound. The price is reading the directory twice.
//
// It returns where archive/zip may begin to read the central directory,
// as zipDirectory does, and the number of entries the end record
// declares.
func (x *extractor) checkZipDirectory(r io.ReaderAt, size int64) ([]int64, uint64, error) {
	declared, starts, err := zipDirectory(r, size)
	if err != nil {
		return nil, 0, x.fail("read zip: %w", err)
	}
	// A declared count can only make the refusal come sooner.
	if declared > uint64(x.opt.MaxEntries) {
		return nil, 0, x.fail("%w", x.tooManyEntries())
	}
	for _, start := range starts {
		n, err := countZipRecords(r, start, size, x.opt.MaxEntries)
		if err != nil {
			return nil, 0, x.fail("read zip: %w", err)
		}
		if n > x.opt.MaxEntries {
			return nil, 0, x.fail("%w", x.tooManyEntries())
		}
	}
	return starts, declared, nil
}

// Layout of a zip's end, as in archive/zip's struct.go.
const (
	zipRecordSig = 0x02014b50
	zipEndSig    = 0x06054b50
	zip64LocSig  = 0x07064b50
	zip64EndSig  = 0x06064b50
	zipRecordLen = 46
	zipEndLen    = 22
	zip64LocLen  = 20
	zip64EndLen  = 56
	zipEndSearch = 65 << 10
)

// zipDirectory returns the entry count a zip declares and where
// archive/zip may begin to read its central directory records. It follows
// archive/zip's readDirectoryEnd step by step, as of Go 1.26, quirks
// included: a reading of its own, however sound, would count records
// other than those archive/zip then reads. FuzzZipDirectory compares them. Where that guesses (the base offset of a zip after a
// prefix), both places are returned. Where it fails, archive/zip would
// too, so the zip is refused as malformed.
func zipDirectory(r io.ReaderAt, size int64) (declared uint64, starts []int64, err error) {
	le := binary.LittleEndian
	tail := make([]byte, min(size, zipEndSearch))
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && err != io.EOF {
		return 0, nil, err
	}
	// The last signature is the end record, even if its comment would
	// overrun the file and an earlier one's would not.
	p := -1
	for i := len(tail) - zipEndLen; i >= 0; i-- {
		if le.Uint32(tail[i:]) == zipEndSig {
			p = i
			break
		}
	}
	if p < 0 || p+zipEndLen+int(le.Uint16(tail[p+20:])) > len(tail) {
		return 0, nil, zip.ErrFormat
	}
	end := size - int64(len(tail)) + int64(p)
	declared = uint64(le.Uint16(tail[p+10:]))
	dirSize := uint64(le.Uint32(tail[p+12:]))
	dirOffset := uint64(le.Uint32(tail[p+16:]))

	// archive/zip looks for zip64 when the size is 0xffff, not 0xffffffff.
	if declared == 0xffff || dirSize == 0xffff || dirOffset == 0xffffffff {
		var loc [zip64LocLen]byte
		if end >= zip64LocLen {
			if _, err := r.ReadAt(loc[:], end-zip64LocLen); err != nil {
				return 0, nil, err
			}
		}
		// A locator that does not fit a single-disk zip64 is ignored,
		// and the 32-bit fields stand.
		if p64 := int64(le.Uint64(loc[8:])); le.Uint32(loc[:]) == zip64LocSig &&
			le.Uint32(loc[4:]) == 0 && le.Uint32(loc[16:]) == 1 && p64 >= 0 {
			var e [zip64EndLen]byte
			if _, err := r.ReadAt(e[:], p64); err != nil {
				return 0, nil, err
			}
			if le.Uint32(e[:]) != zip64EndSig {
				return 0, nil, zip.ErrFormat
			}
			end = p64
			declared = le.Uint64(e[32:])
			dirSize = le.Uint64(e[40:])
			dirOffset = le.Uint64(e[48:])
		}
	}
	if dirSize > math.MaxInt64 || dirOffset > math.MaxInt64 {
		return 0, nil, zip.ErrFormat
	}
	// The same arithmetic as archive/zip's, overflow included.
	base := end - int64(dirSize) - int64(dirOffset)
	start := base + int64(dirOffset)
	if start < 0 || start >= size {
		return 0, nil, zip.ErrFormat
	}
	starts = []int64{start}
	if base > 0 {
		// archive/zip takes the base as 0 instead if a record it can
		// parse is found there.
		starts = append(starts, int64(dirOffset))
	}
	return declared, starts, nil
}

// countZipRecords counts the records from start that archive/zip would
// read, stopping at the first that is not one or is cut short by the end
// of the file, or once there are more than limit. Unlike archive/zip it
// does not parse extra fields, so it may count a record that archive/zip
// stops at: never fewer.
func countZipRecords(r io.ReaderAt, start, size int64, limit int) (int, error) {
	if start >= size {
		return 0, nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, start, size-start), 64<<10)
	var h [zipRecordLen]byte
	n := 0
	for n <= limit {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return n, endOK(err)
		}
		if binary.LittleEndian.Uint32(h[:]) != zipRecordSig {
			break
		}
		vars := int(binary.LittleEndian.Uint16(h[28:])) + int(binary.LittleEndian.Uint16(h[30:])) + int(binary.LittleEndian.Uint16(h[32:]))
		if _, err := br.Discard(vars); err != nil {
			return n, endOK(err)
		}
		n++
	}
	return n, nil
}

// endOK drops the errors of a record cut short, which only ends the
// directory, and keeps those of reading (cancellation, I/O).
func endOK(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil
	}
	return err
}
