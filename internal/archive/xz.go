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
	"math"
	"runtime"
	"sync"
	"sync/atomic"

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
//
// The pure-Go decoder is several times slower than liblzma, and runs on
// one core. Multi-threaded xz (the default of xz 5.4 and later with more
// than one thread) writes independent blocks whose headers declare both
// their sizes; such blocks, after the first of their stream, are read
// ahead and decoded on other goroutines (see xzJob), up to workers blocks
// at a time counting the one being read. The container is still parsed
// in order on the reading goroutine, and each block is decoded by the
// same code either way, so errors are the same and come after the whole
// output of the blocks before; a parse error met ahead waits behind them.
// (How much of a failing block comes out first depends, either way, on
// how the decoder is read.)
type xzReader struct {
	in      *bufio.Reader
	maxDict int64
	err     error // sticky: io.EOF at the clean end, or the first failure

	inStream bool
	streams  int
	flags    byte      // check type of the current stream
	blocks   uint64    // blocks parsed so far in the current stream
	records  hash.Hash // their index records, to compare with the index

	// queue holds the blocks parsed and not yet read, in order; only its
	// last can be one decoded here from in, which stops the parse until
	// it ends. parseErr is what ended the parse (io.EOF at the clean
	// end), reported once the queue is empty.
	workers  int
	queue    []xzItem
	parseErr error
	cur      *xzJob        // queue[0] once done
	out      []byte        // what is left of cur's output
	jobs     int64         // jobs started
	failed   *atomic.Int64 // the lowest seq of a failed job
	spareOut []byte        // a read job's buffers, for the next one
	spareIn  []byte
}

// xzItem is a block in the queue: blk is decoded here, job elsewhere.
type xzItem struct {
	blk *xzBlock
	job *xzJob
}

// xzBlock is the state of a block being decoded, here or by a job.
type xzBlock struct {
	num          uint64 // in its stream, from 1
	flags        byte   // the stream's check type
	headerLen    int64
	dict         int64     // the dictionary size the header asks for
	in           io.Reader // the compressed data, padding and check
	compressed   *byteCounter
	lz           io.Reader
	check        hash.Hash // nil for check type None
	uncompressed int64
	// Sizes declared in the block header, or -1.
	wantCompressed, wantUncompressed int64
}

// xzJob is a block decoded on its own goroutine from a copy of its bytes.
// done is closed once out and err are set.
type xzJob struct {
	seq  int64
	done chan struct{}
	out  []byte
	err  error
	in   []byte // the copy, handed back for reuse once done
}

const (
	xzHeaderLen = 12
	xzFooterLen = 12
	xzLZMA2     = 0x21

	// xzMaxJob bounds the sizes, compressed and not, and the dictionary a
	// block decoded ahead declares: each worker then holds an input copy,
	// a dictionary and an output of at most this (the buffers, grown as
	// bytes come, up to twice), whatever the file says. The dictionary is the declared one, though the block
	// cannot use more than its size, so that a block lying about its size
	// fails as it would decoded as it is read. Multi-threaded xz makes
	// blocks of three times the dictionary, 24 MiB at its default level;
	// larger blocks are decoded as they are read.
	xzMaxJob = 64 << 20
)

var (
	xzMagic       = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	xzFooterMagic = []byte{'Y', 'Z'}
	// crc64Table is built on first use: 33 KB of tables (hash/crc64
	// builds ECMA's and ISO's at once), which every command paid at
	// start-up and only an xz stream checked by CRC-64 reads.
	crc64Table = sync.OnceValue(func() *crc64.Table { return crc64.MakeTable(crc64.ECMA) })

	// errXzStopped ends a job after an earlier block failed; it is never
	// reported, as the earlier failure is.
	errXzStopped = errors.New("xz: decoding stopped")
)

func newXzReader(in *bufio.Reader, maxDict int64) *xzReader {
	failed := new(atomic.Int64)
	failed.Store(math.MaxInt64)
	return &xzReader{in: in, maxDict: maxDict, workers: runtime.GOMAXPROCS(0), failed: failed}
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
		if len(z.out) > 0 {
			n := copy(p, z.out)
			z.out = z.out[n:]
			if len(z.out) == 0 {
				// Start the next job before the caller works on these bytes.
				z.doneJob()
			}
			return n, nil
		}
		if z.cur != nil {
			// Read in full, and failed.
			return 0, z.cur.err
		}
		z.fill()
		if len(z.queue) == 0 {
			return 0, z.parseErr
		}
		if j := z.queue[0].job; j != nil {
			<-j.done
			z.cur, z.out = j, j.out
			if len(z.out) == 0 {
				z.doneJob()
			}
			continue
		}
		b := z.queue[0].blk
		n, err := b.Read(p)
		if err == io.EOF {
			z.queue = z.queue[:0]
			z.record(b.headerLen+b.compressed.n+int64(checkSize(b.flags)), b.uncompressed)
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// doneJob drops cur, read in full, from the queue unless it failed, keeps
// its buffers, and starts the next job.
func (z *xzReader) doneJob() {
	j := z.cur
	if j.err != nil {
		return
	}
	z.cur = nil
	z.spareOut, z.spareIn = j.out, j.in
	z.queue[0] = xzItem{}
	z.queue = z.queue[1:]
	z.fill()
}

// fill parses ahead until the queue is full, the parse has ended, or a
// block decoded here from in must be read first.
func (z *xzReader) fill() {
	for z.parseErr == nil && len(z.queue) < max(z.workers, 1) {
		if n := len(z.queue); n > 0 && z.queue[n-1].blk != nil {
			return
		}
		b, err := z.nextBlock()
		if err != nil {
			z.parseErr = err
			return
		}
		if !z.ahead(b) {
			if err := z.startHere(b); err != nil {
				z.parseErr = err
				return
			}
			z.queue = append(z.queue, xzItem{blk: b})
			return
		}
		z.queue = append(z.queue, xzItem{job: z.startJob(b)})
	}
}

// ahead says whether to decode b on another goroutine. The first block of
// a stream is decoded here, so that a stream of one block, which gains
// nothing, is read as it always was: streamed, with nothing held.
func (z *xzReader) ahead(b *xzBlock) bool {
	return z.workers > 1 && b.num > 1 &&
		b.wantCompressed >= 0 && b.wantCompressed <= xzMaxJob &&
		b.wantUncompressed >= 0 && b.wantUncompressed <= xzMaxJob &&
		b.dict <= xzMaxJob
}

func (z *xzReader) record(unpadded, uncompressed int64) {
	binary.Write(z.records, binary.LittleEndian, [2]int64{unpadded, uncompressed})
}

func (z *xzReader) corrupt(format string, args ...any) error {
	return xzCorrupt(format, args...)
}

func xzCorrupt(format string, args ...any) error {
	return fmt.Errorf("xz: corrupt input: "+format, args...)
}

// nextBlock reads up to and including the next block header, passing over
// stream boundaries. It returns io.EOF at the clean end of the input.
func (z *xzReader) nextBlock() (*xzBlock, error) {
	for {
		if !z.inStream {
			if err := z.readStreamHeader(); err != nil {
				return nil, err
			}
		}
		size, err := z.in.ReadByte()
		if err != nil {
			return nil, noEOF(err)
		}
		if size != 0 {
			return z.readBlockHeader(size)
		}
		// A zero where a block header would start is the index indicator.
		if err := z.readIndex(); err != nil {
			return nil, err
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
		return crc64.New(crc64Table()), nil
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
// read, and checks the dictionary it claims.
func (z *xzReader) readBlockHeader(size byte) (*xzBlock, error) {
	num := z.blocks + 1
	n := (int(size) + 1) * 4
	h := make([]byte, n)
	h[0] = size
	if _, err := io.ReadFull(z.in, h[1:]); err != nil {
		return nil, noEOF(err)
	}
	if crc32.ChecksumIEEE(h[:n-4]) != binary.LittleEndian.Uint32(h[n-4:]) {
		return nil, z.corrupt("block %d: header checksum mismatch", num)
	}
	flags := h[1]
	if flags&0x3c != 0 {
		return nil, z.corrupt("block %d: reserved header flags set", num)
	}
	if flags&0x03 != 0 {
		return nil, fmt.Errorf("xz: block %d: filter chains other than LZMA2 alone are not supported", num)
	}
	r := bytes.NewReader(h[2 : n-4])
	b := &xzBlock{num: num, flags: z.flags, headerLen: int64(n), wantCompressed: -1, wantUncompressed: -1}
	var err error
	if flags&0x40 != 0 {
		if b.wantCompressed, err = xzSize(r); err != nil || b.wantCompressed == 0 {
			return nil, z.corrupt("block %d: bad compressed size", num)
		}
	}
	if flags&0x80 != 0 {
		if b.wantUncompressed, err = xzSize(r); err != nil {
			return nil, z.corrupt("block %d: bad uncompressed size", num)
		}
	}
	id, err1 := xzVarint(r)
	propLen, err2 := xzVarint(r)
	prop, err3 := r.ReadByte()
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, z.corrupt("block %d: bad filter flags: %v", num, err)
	}
	if id != xzLZMA2 || propLen != 1 {
		return nil, fmt.Errorf("xz: block %d: filter %#x is not supported (only LZMA2)", num, id)
	}
	for r.Len() > 0 {
		if c, _ := r.ReadByte(); c != 0 {
			return nil, z.corrupt("block %d: nonzero header padding", num)
		}
	}
	dict, err := lzma.DecodeDictCap(prop)
	if err != nil {
		return nil, z.corrupt("block %d: %v", num, err)
	}
	if dict > z.maxDict {
		return nil, limitErr(settingWindow, fmt.Sprintf("xz block %d needs a %d-byte dictionary, more than the limit of %d bytes",
			num, dict, z.maxDict))
	}
	b.dict = dict
	if b.check, err = newCheck(z.flags); err != nil {
		return nil, err
	}
	z.blocks = num
	return b, nil
}

// start starts decoding b from in.
func (b *xzBlock) start(in io.Reader, dict int64) error {
	b.in = in
	b.compressed = &byteCounter{r: in}
	var lz io.Reader = b.compressed
	if b.wantCompressed >= 0 {
		lz = io.LimitReader(lz, b.wantCompressed)
	}
	cfg := lzma.Reader2Config{DictCap: int(max(dict, lzma.MinDictCap))}
	var err error
	if b.lz, err = cfg.NewReader2(lz); err != nil {
		return fmt.Errorf("xz: block %d: %w", b.num, err)
	}
	return nil
}

// startHere starts decoding b from the input, as it is read.
func (z *xzReader) startHere(b *xzBlock) error {
	return b.start(z.in, b.dict)
}

// startJob reads b's bytes, records b for the index as its header
// describes it (the job fails unless it decodes to that), and starts
// decoding it on its own goroutine.
//
// The copy of the bytes is short when the input is: the job then sees the
// input end or fail where the block would have, and so fails as the
// block would have; the parse stops there. Both the copy and the output
// grow as bytes come, rather than being sized from the header, so that
// the header's claims cost no memory the input does not back.
func (z *xzReader) startJob(b *xzBlock) *xzJob {
	tail := int64(checkSize(b.flags))
	pad := (4 - (b.headerLen+b.wantCompressed)%4) % 4
	w := bytes.NewBuffer(z.spareIn[:0])
	_, err := io.CopyN(w, z.in, b.wantCompressed+pad+tail)
	var in io.Reader = bytes.NewReader(w.Bytes())
	if err != nil {
		in = io.MultiReader(in, errReader{err})
		z.parseErr = noEOF(err)
	}
	z.record(b.headerLen+b.wantCompressed+tail, b.wantUncompressed)

	j := &xzJob{seq: z.jobs, done: make(chan struct{}), in: w.Bytes(), out: z.spareOut[:0]}
	z.jobs++
	z.spareIn, z.spareOut = nil, nil
	go j.run(b, xzStopReader{in, j.seq, z.failed}, z.failed)
	return j
}

func (j *xzJob) run(b *xzBlock, in io.Reader, failed *atomic.Int64) {
	defer close(j.done)
	out := bytes.NewBuffer(j.out)
	err := b.start(in, b.dict)
	if err == nil {
		// Short of the declared size, b fails rather than ending.
		_, err = io.CopyN(out, b, b.wantUncompressed)
	}
	// A block of the declared size must end there; reading on checks
	// that it does, and its padding and check.
	var one [1]byte
	for err == nil {
		_, err = b.Read(one[:])
	}
	if err == io.EOF {
		err = nil
	}
	j.out, j.err = out.Bytes(), err
	if err != nil {
		// Stop the jobs after this one: nothing past it will be read.
		for {
			f := failed.Load()
			if f <= j.seq || failed.CompareAndSwap(f, j.seq) {
				break
			}
		}
	}
}

// Read decodes b, and at its end checks its sizes, padding and check.
func (b *xzBlock) Read(p []byte) (int, error) {
	n, err := b.lz.Read(p)
	b.uncompressed += int64(n)
	if b.check != nil {
		b.check.Write(p[:n])
	}
	if b.wantUncompressed >= 0 && b.uncompressed > b.wantUncompressed {
		return n, xzCorrupt("block holds more than its declared %d bytes", b.wantUncompressed)
	}
	switch {
	case err == io.EOF:
		if err := b.end(); err != nil {
			return n, err
		}
		return n, io.EOF
	case err != nil:
		return n, fmt.Errorf("xz: block %d: %w", b.num, err)
	}
	return n, nil
}

// end reads the padding and check after b's LZMA2 data.
func (b *xzBlock) end() error {
	c := b.compressed.n
	if b.wantCompressed >= 0 && c != b.wantCompressed {
		return xzCorrupt("block %d: %d compressed bytes, header says %d", b.num, c, b.wantCompressed)
	}
	if b.wantUncompressed >= 0 && b.uncompressed != b.wantUncompressed {
		return xzCorrupt("block %d: %d bytes, header says %d", b.num, b.uncompressed, b.wantUncompressed)
	}
	pad := (4 - (b.headerLen+c)%4) % 4
	tail := make([]byte, pad+int64(checkSize(b.flags)))
	if _, err := io.ReadFull(b.in, tail); err != nil {
		return noEOF(err)
	}
	if !allZero(tail[:pad]) {
		return xzCorrupt("block %d: nonzero padding", b.num)
	}
	if b.check != nil && !checkMatches(b.check, tail[pad:]) {
		return fmt.Errorf("xz: block %d: checksum mismatch", b.num)
	}
	return nil
}

// xzStopReader is a job's input. It fails once a job before it (lower
// seq) has failed, so that blocks nobody will read are not decoded.
type xzStopReader struct {
	r      io.Reader
	seq    int64
	failed *atomic.Int64
}

func (s xzStopReader) Read(p []byte) (int, error) {
	if s.failed.Load() < s.seq {
		return 0, errXzStopped
	}
	return s.r.Read(p)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

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

// xzDeclared is what an .xz file's indexes say it decodes to: the sum of
// the uncompressed sizes of every block of every stream, read from the
// end of the file backwards (stream padding, footer, index, and the
// stream header its records place), as xz --list reads it. It costs
// reading each stream's footer and index, a few bytes per block.
//
// The decoder compares each index with the blocks it decoded, but only
// once it reaches it, at the end of its stream: a small file of
// compressed zeros (6,900 to one with xz -6) decodes for minutes before
// MaxBytes stops it (9 s a GiB on this repository's machine; 16 GiB from
// 2.5 MB). Read first, the index refuses such a file at once if it tells
// the truth, and bounds what the decoder is allowed to produce if it does
// not (extractor.declared).
func xzDeclared(r io.ReaderAt, size int64) (int64, error) {
	le := binary.LittleEndian
	// A file that is no xz at all (a gzip named .tar.xz) is said to be
	// one, as the decoder says it, not found corrupt at its end.
	var magic [6]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil && err != io.EOF {
		return 0, err
	}
	if !bytes.Equal(magic[:], xzMagic) {
		return 0, errors.New("xz: not an xz stream (bad magic)")
	}
	// A file of many small streams is walked through a window: a read
	// or more for each stream's footer, index and header took 3.7 s for
	// 16 MiB of empty streams, which the decoder passes in 0.3 s.
	r = &windowReaderAt{r: r, back: true}
	var total int64
	pos := size
	var pad []byte
	for streams := 0; ; streams++ {
		var err error
		if pos, err = xzBeforePadding(r, pos, &pad); err != nil {
			return 0, err
		}
		if pos == 0 && streams > 0 {
			break
		}
		if pos < xzHeaderLen+xzFooterLen || pos%4 != 0 {
			return 0, xzCorrupt("the file's %d bytes end in no stream footer", pos)
		}
		var f [xzFooterLen]byte
		if _, err := r.ReadAt(f[:], pos-xzFooterLen); err != nil {
			return 0, err
		}
		if !bytes.Equal(f[10:], xzFooterMagic) || crc32.ChecksumIEEE(f[4:10]) != le.Uint32(f[:4]) {
			return 0, xzCorrupt("no valid stream footer at offset %d", pos-xzFooterLen)
		}
		indexSize := (int64(le.Uint32(f[4:8])) + 1) * 4
		indexStart := pos - xzFooterLen - indexSize
		if indexStart < xzHeaderLen {
			return 0, xzCorrupt("stream footer at offset %d gives an index larger than the file", pos-xzFooterLen)
		}
		blocks, uncompressed, err := xzIndexSums(io.NewSectionReader(r, indexStart, indexSize))
		if err != nil {
			return 0, xzCorrupt("index at offset %d: %v", indexStart, err)
		}
		start := indexStart - blocks - xzHeaderLen
		if blocks > indexStart || start < 0 {
			return 0, xzCorrupt("index at offset %d lists blocks larger than the file", indexStart)
		}
		var h [xzHeaderLen]byte
		if _, err := r.ReadAt(h[:], start); err != nil {
			return 0, err
		}
		if !bytes.Equal(h[:6], xzMagic) || [2]byte(h[6:8]) != [2]byte(f[8:10]) {
			return 0, xzCorrupt("the index at offset %d places its stream's header at offset %d, where there is none that matches the footer", indexStart, start)
		}
		if uncompressed > math.MaxInt64-total {
			return 0, xzCorrupt("the file's indexes declare more than %d bytes", int64(math.MaxInt64))
		}
		total += uncompressed
		pos = start
	}
	return total, nil
}

// xzBeforePadding is where the stream padding (zeros, four at a time)
// that ends at pos begins. It is read backwards through buf, 4 KiB at a
// time (xzDeclared's window reads the file 64 KiB at a time): four bytes
// a read of the file took 9.5 s for 64 MiB of padding, which the decoder
// passes in 0.3 s.
func xzBeforePadding(r io.ReaderAt, pos int64, buf *[]byte) (int64, error) {
	for pos >= 4 && pos%4 == 0 {
		if *buf == nil {
			*buf = make([]byte, 4<<10)
		}
		b := (*buf)[:min(int64(len(*buf)), pos)]
		if _, err := r.ReadAt(b, pos-int64(len(b))); err != nil {
			return 0, err
		}
		for i := len(b); i >= 4; i -= 4 {
			if [4]byte(b[i-4:i]) != [4]byte{} {
				return pos, nil
			}
			pos -= 4
		}
	}
	return pos, nil
}

// xzIndexSums reads an index (indicator, records, padding, CRC32) and
// returns the sum of its blocks' sizes as they lie in the stream (each
// unpadded size padded to four bytes) and of their uncompressed sizes.
func xzIndexSums(sr *io.SectionReader) (blocks, uncompressed int64, err error) {
	// Sized to the index: a file of small streams has one each.
	r := &crcReader{in: bufio.NewReaderSize(sr, int(min(4<<10, sr.Size()))), crc: crc32.NewIEEE()}
	if c, err := r.ReadByte(); err != nil || c != 0 {
		return 0, 0, errors.New("no index indicator")
	}
	count, err := xzVarint(r)
	if err != nil {
		return 0, 0, noEOF(err)
	}
	// Each record takes two bytes at least: a count beyond that is
	// found wrong without reading it.
	if count > uint64(sr.Size()/2) {
		return 0, 0, fmt.Errorf("lists %d blocks in %d bytes", count, sr.Size())
	}
	for range count {
		unpadded, err1 := xzSize(r)
		size, err2 := xzSize(r)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, noEOF(err)
		}
		padded := (unpadded + 3) &^ 3
		if unpadded > math.MaxInt64-3 || padded > math.MaxInt64-blocks || size > math.MaxInt64-uncompressed {
			return 0, 0, errors.New("sizes out of range")
		}
		blocks += padded
		uncompressed += size
	}
	for r.n%4 != 0 {
		if c, err := r.ReadByte(); err != nil || c != 0 {
			return 0, 0, errors.New("bad padding")
		}
	}
	sum := r.crc.Sum32()
	var stored [4]byte
	for i := range stored {
		if stored[i], err = r.in.ReadByte(); err != nil {
			return 0, 0, noEOF(err)
		}
	}
	if sum != binary.LittleEndian.Uint32(stored[:]) || r.n+4 != sr.Size() {
		return 0, 0, errors.New("checksum mismatch or size other than the footer's")
	}
	return blocks, uncompressed, nil
}
