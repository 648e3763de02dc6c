package archive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// xzReader decodes an .xz file (one or more streams) with ulikunitz/xz's
// LZMA2 decoder, but parses the container itself. xz.Reader sizes each
// block's dictionary from the block header with no upper bound, so a few
// hundred bytes claiming a 4 GiB dictionary make it allocate 4 GiB, and
// ReaderConfig.DictCap is only a floor. Parsing the block headers here
// lets the claim be refused before anything is allocated; the LZMA2
// decoder is then given exactly the dictionary the header asked for.
//
// The format is xz-file-format 1.x (tukaani.org/xz/xz-file-format.txt)
// restricted, like ulikunitz/xz, to a single LZMA2 filter per block.
type xzReader struct {
	in      *bufio.Reader
	maxDict int64
	err     error // sticky: io.EOF at the clean end, or the first failure

	inStream bool
	streams  int
	flags    byte      // check type of the current stream
	blocks   uint64    // blocks decoded so far in the current stream
	records  hash.Hash // their index records, to compare with the index
	blk      *xzBlock
}

// xzBlock is the state of the block being decoded.
type xzBlock struct {
	headerLen    int64
	compressed   *byteCounter
	lz           io.Reader
	check        hash.Hash // nil for check type None
	uncompressed int64
	// Sizes declared in the block header, or -1.
	wantCompressed, wantUncompressed int64
}

const (
	xzHeaderLen = 12
	xzFooterLen = 12
	xzLZMA2     = 0x21
)

var (
	xzMagic       = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	xzFooterMagic = []byte{'Y', 'Z'}
	crc64Table    = crc64.MakeTable(crc64.ECMA)
)

func newXzReader(in *bufio.Reader, maxDict int64) *xzReader {
	return &xzReader{in: in, maxDict: maxDict}
}

func (z *xzReader) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n, err := z.read(p)
	if err != nil {
		z.err = err
	}
	return n, err
}

func (z *xzReader) read(p []byte) (int, error) {
	for {
		if z.blk == nil {
			if err := z.nextBlock(); err != nil {
				return 0, err
			}
		}
		b := z.blk
		n, err := b.lz.Read(p)
		b.uncompressed += int64(n)
		if b.check != nil {
			b.check.Write(p[:n])
		}
		if b.wantUncompressed >= 0 && b.uncompressed > b.wantUncompressed {
			return n, z.corrupt("block holds more than its declared %d bytes", b.wantUncompressed)
		}
		switch {
		case err == io.EOF:
			if err := z.endBlock(); err != nil {
				return n, err
			}
			if n > 0 {
				return n, nil
			}
		case err != nil:
			return n, fmt.Errorf("xz: block %d: %w", z.blocks+1, err)
		default:
			return n, nil
		}
	}
}

func (z *xzReader) corrupt(format string, args ...any) error {
	return fmt.Errorf("xz: corrupt input: "+format, args...)
}

// nextBlock reads up to and including the next block header, passing over
// stream boundaries. It returns io.EOF at the clean end of the input.
func (z *xzReader) nextBlock() error {
	for {
		if !z.inStream {
			if err := z.readStreamHeader(); err != nil {
				return err
			}
		}
		size, err := z.in.ReadByte()
		if err != nil {
			return noEOF(err)
		}
		if size != 0 {
			return z.readBlockHeader(size)
		}
		// A zero where a block header would start is the index indicator.
		if err := z.readIndex(); err != nil {
			return err
		}
		z.inStream = false
	}
}

// readStreamHeader reads the stream padding (after a first stream) and
// the header of the next stream, or returns io.EOF at the end of input.
func (z *xzReader) readStreamHeader() error {
	if z.streams > 0 {
		pad := 0
		for {
			b, err := z.in.Peek(1)
			if err == io.EOF {
				if pad%4 != 0 {
					return z.corrupt("stream padding of %d bytes is not a multiple of 4", pad)
				}
				return io.EOF
			}
			if err != nil {
				return err
			}
			if b[0] != 0 {
				break
			}
			z.in.ReadByte()
			pad++
		}
		if pad%4 != 0 {
			return z.corrupt("stream padding of %d bytes is not a multiple of 4", pad)
		}
	}
	var h [xzHeaderLen]byte
	if _, err := io.ReadFull(z.in, h[:]); err != nil {
		return noEOF(err)
	}
	if !bytes.Equal(h[:6], xzMagic) {
		return errors.New("xz: not an xz stream (bad magic)")
	}
	if crc32.ChecksumIEEE(h[6:8]) != binary.LittleEndian.Uint32(h[8:]) {
		return z.corrupt("stream header checksum mismatch")
	}
	if h[6] != 0 || h[7]&0xf0 != 0 {
		return z.corrupt("reserved stream flags set")
	}
	if _, err := newCheck(h[7]); err != nil {
		return err
	}
	z.flags = h[7]
	z.inStream = true
	z.streams++
	z.blocks = 0
	z.records = sha256.New()
	return nil
}

// newCheck returns the hash for an xz check type, nil for None.
func newCheck(flags byte) (hash.Hash, error) {
	switch flags {
	case 0x00:
		return nil, nil
	case 0x01:
		return crc32.NewIEEE(), nil
	case 0x04:
		return crc64.New(crc64Table), nil
	case 0x0a:
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("xz: unsupported check type %#x", flags)
}

func checkSize(flags byte) int {
	switch flags {
	case 0x01:
		return 4
	case 0x04:
		return 8
	case 0x0a:
		return 32
	}
	return 0
}

// readBlockHeader parses a block header whose first byte, size, has been
// read, checks the dictionary it claims, and starts decoding the block.
func (z *xzReader) readBlockHeader(size byte) error {
	n := (int(size) + 1) * 4
	h := make([]byte, n)
	h[0] = size
	if _, err := io.ReadFull(z.in, h[1:]); err != nil {
		return noEOF(err)
	}
	if crc32.ChecksumIEEE(h[:n-4]) != binary.LittleEndian.Uint32(h[n-4:]) {
		return z.corrupt("block %d: header checksum mismatch", z.blocks+1)
	}
	flags := h[1]
	if flags&0x3c != 0 {
		return z.corrupt("block %d: reserved header flags set", z.blocks+1)
	}
	if flags&0x03 != 0 {
		return fmt.Errorf("xz: block %d: filter chains other than LZMA2 alone are not supported", z.blocks+1)
	}
	r := bytes.NewReader(h[2 : n-4])
	b := &xzBlock{headerLen: int64(n), wantCompressed: -1, wantUncompressed: -1}
	var err error
	if flags&0x40 != 0 {
		if b.wantCompressed, err = xzSize(r); err != nil || b.wantCompressed == 0 {
			return z.corrupt("block %d: bad compressed size", z.blocks+1)
		}
	}
	if flags&0x80 != 0 {
		if b.wantUncompressed, err = xzSize(r); err != nil {
			return z.corrupt("block %d: bad uncompressed size", z.blocks+1)
		}
	}
	id, err1 := xzVarint(r)
	propLen, err2 := xzVarint(r)
	prop, err3 := r.ReadByte()
	if err := errors.Join(err1, err2, err3); err != nil {
		return z.corrupt("block %d: bad filter flags: %v", z.blocks+1, err)
	}
	if id != xzLZMA2 || propLen != 1 {
		return fmt.Errorf("xz: block %d: filter %#x is not supported (only LZMA2)", z.blocks+1, id)
	}
	for r.Len() > 0 {
		if c, _ := r.ReadByte(); c != 0 {
			return z.corrupt("block %d: nonzero header padding", z.blocks+1)
		}
	}
	dict, err := lzma.DecodeDictCap(prop)
	if err != nil {
		return z.corrupt("block %d: %v", z.blocks+1, err)
	}
	if dict > z.maxDict {
		return limitErr(fmt.Sprintf("xz block %d needs a %d-byte dictionary, more than the limit of %d bytes",
			z.blocks+1, dict, z.maxDict))
	}

	b.compressed = &byteCounter{r: z.in}
	var in io.Reader = b.compressed
	if b.wantCompressed >= 0 {
		in = io.LimitReader(in, b.wantCompressed)
	}
	cfg := lzma.Reader2Config{DictCap: int(max(dict, lzma.MinDictCap))}
	if b.lz, err = cfg.NewReader2(in); err != nil {
		return fmt.Errorf("xz: block %d: %w", z.blocks+1, err)
	}
	if b.check, err = newCheck(z.flags); err != nil {
		return err
	}
	z.blk = b
	return nil
}

// endBlock reads the padding and check after a block's LZMA2 data and
// records the block for the index.
func (z *xzReader) endBlock() error {
	b := z.blk
	z.blk = nil
	z.blocks++
	c := b.compressed.n
	if b.wantCompressed >= 0 && c != b.wantCompressed {
		return z.corrupt("block %d: %d compressed bytes, header says %d", z.blocks, c, b.wantCompressed)
	}
	if b.wantUncompressed >= 0 && b.uncompressed != b.wantUncompressed {
		return z.corrupt("block %d: %d bytes, header says %d", z.blocks, b.uncompressed, b.wantUncompressed)
	}
	pad := (4 - (b.headerLen+c)%4) % 4
	tail := make([]byte, pad+int64(checkSize(z.flags)))
	if _, err := io.ReadFull(z.in, tail); err != nil {
		return noEOF(err)
	}
	if !allZero(tail[:pad]) {
		return z.corrupt("block %d: nonzero padding", z.blocks)
	}
	if b.check != nil && !checkMatches(b.check, tail[pad:]) {
		return fmt.Errorf("xz: block %d: checksum mismatch", z.blocks)
	}
	unpadded := b.headerLen + c + int64(checkSize(z.flags))
	binary.Write(z.records, binary.LittleEndian, [2]int64{unpadded, b.uncompressed})
	return nil
}

// checkMatches compares a check with its stored form: CRCs are stored
// little-endian, SHA-256 as is.
func checkMatches(h hash.Hash, stored []byte) bool {
	switch h := h.(type) {
	case hash.Hash32:
		return h.Sum32() == binary.LittleEndian.Uint32(stored)
	case hash.Hash64:
		return h.Sum64() == binary.LittleEndian.Uint64(stored)
	}
	return bytes.Equal(h.Sum(nil), stored)
}

// readIndex reads the index (its indicator byte already read) and the
// stream footer, and checks both against the blocks decoded.
func (z *xzReader) readIndex() error {
	r := &crcReader{in: z.in, crc: crc32.NewIEEE()}
	r.crc.Write([]byte{0})
	r.n = 1
	count, err := xzVarint(r)
	if err != nil {
		return z.corrupt("index: %v", noEOF(err))
	}
	if count != z.blocks {
		return z.corrupt("index lists %d blocks, stream has %d", count, z.blocks)
	}
	records := sha256.New()
	for range count {
		unpadded, err1 := xzSize(r)
		uncompressed, err2 := xzSize(r)
		if err := errors.Join(err1, err2); err != nil {
			return z.corrupt("index: %v", noEOF(err))
		}
		binary.Write(records, binary.LittleEndian, [2]int64{unpadded, uncompressed})
	}
	if !bytes.Equal(records.Sum(nil), z.records.Sum(nil)) {
		return z.corrupt("index does not match the blocks")
	}
	for r.n%4 != 0 {
		if c, err := r.ReadByte(); err != nil || c != 0 {
			return z.corrupt("index: bad padding")
		}
	}
	size := r.n
	var stored [4]byte
	if _, err := io.ReadFull(z.in, stored[:]); err != nil {
		return noEOF(err)
	}
	if r.crc.Sum32() != binary.LittleEndian.Uint32(stored[:]) {
		return z.corrupt("index checksum mismatch")
	}
	return z.readFooter(size)
}

func (z *xzReader) readFooter(indexSize int64) error {
	var f [xzFooterLen]byte
	if _, err := io.ReadFull(z.in, f[:]); err != nil {
		return noEOF(err)
	}
	switch {
	case crc32.ChecksumIEEE(f[4:10]) != binary.LittleEndian.Uint32(f[:4]):
		return z.corrupt("stream footer checksum mismatch")
	case !bytes.Equal(f[10:], xzFooterMagic):
		return z.corrupt("bad stream footer magic")
	case f[8] != 0 || f[9] != z.flags:
		return z.corrupt("stream footer flags differ from the header")
	case (int64(binary.LittleEndian.Uint32(f[4:8]))+1)*4 != indexSize+4:
		return z.corrupt("stream footer gives the wrong index size")
	}
	return nil
}

// xzVarint reads an integer in the xz encoding: seven bits a byte, least
// significant first, at most nine bytes, no superfluous zero bytes.
func xzVarint(r io.ByteReader) (uint64, error) {
	var v uint64
	for i := range 9 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			if b == 0 && i > 0 {
				return 0, errors.New("integer has a superfluous zero byte")
			}
			return v, nil
		}
	}
	return 0, errors.New("integer longer than 9 bytes")
}

// xzSize reads an integer that is a size, and so must fit in an int64.
func xzSize(r io.ByteReader) (int64, error) {
	v, err := xzVarint(r)
	if err == nil && v > 1<<63-1 {
		err = errors.New("size out of range")
	}
	return int64(v), err
}

// crcReader feeds the bytes it reads to a CRC and counts them.
type crcReader struct {
	in  io.ByteReader
	crc hash.Hash32
	n   int64
}

func (r *crcReader) ReadByte() (byte, error) {
	b, err := r.in.ReadByte()
	if err == nil {
		r.crc.Write([]byte{b})
		r.n++
	}
	return b, err
}

// byteCounter counts the bytes read through it.
type byteCounter struct {
	r io.Reader
	n int64
}

func (c *byteCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF, for reads that the format
// requires to succeed.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
