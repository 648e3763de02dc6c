package layer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
)

// Compressors bounds how many compressors run at once across every layer
// that shares it, and keeps them and their buffers for the next layer.
// Without it each layer brought its own compressors: memory grew with the
// number of layers written at once times the blocks each compressed at
// once, and with the garbage of every layer written.
//
// A gzip layer takes a compressor per 1 MiB block, for as long as the
// block is compressed; its output then waits, without the compressor,
// until the blocks before it are written out. A zstd layer takes one for
// the whole layer (its stream is compressed in order). What one
// compressor holds: about 2 MiB for gzip (the 1 MiB block, 1 MiB of
// deflate state), about 18 MiB for zstd (an 8 MiB window kept twice,
// tables). Across the layers, at most 2n gzip blocks are compressed or
// wait to be written out (1 MiB each, the input or the output), so that
// a block done before the one ahead of it can give its compressor to the
// next block without memory growing with the layers or their jobs.
type Compressors struct {
	tokens    chan struct{}
	unwritten chan struct{} // gzip blocks taken by a compressor and not written out
	slots     freeList[*gzipSlot]
	outs      freeList[*bytes.Buffer]
	blocks    freeList[[]byte]
	tails     freeList[[]byte]
	// zstd encoders differ in whether they compress a block while the
	// next is being filled (Jobs > 1), which Reset cannot change.
	zstdSync, zstdAsync freeList[*zstd.Encoder]
}

// NewCompressors returns a bound of n compressors at once (at least 1):
// a build passes its --jobs.
func NewCompressors(n int) *Compressors {
	n = max(n, 1)
	return &Compressors{
		tokens:    make(chan struct{}, n),
		unwritten: make(chan struct{}, 2*n),
		slots:     newFreeList[*gzipSlot](n),
		outs:      newFreeList[*bytes.Buffer](2 * n),
		blocks:    newFreeList[[]byte](2 * n),
		tails:     newFreeList[[]byte](2 * n),
		zstdSync:  newFreeList[*zstd.Encoder](n),
		zstdAsync: newFreeList[*zstd.Encoder](n),
	}
}

// shared is what layers use when Options.Compressors is nil: one bound
// for the whole process, a compressor per CPU.
var shared = sync.OnceValue(func() *Compressors { return NewCompressors(runtime.GOMAXPROCS(0)) })

func (c *Compressors) acquire() { c.tokens <- struct{}{} }
func (c *Compressors) release() { <-c.tokens }

// freeList keeps up to its capacity of released values for reuse; more
// are left to the garbage collector, so what it holds stays bounded.
type freeList[T any] struct{ ch chan T }

func newFreeList[T any](n int) freeList[T] { return freeList[T]{ch: make(chan T, n)} }

func (f freeList[T]) get() (T, bool) {
	select {
	case v := <-f.ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func (f freeList[T]) put(v T) {
	select {
	case f.ch <- v:
	default:
	}
}

// The gzip framing is pgzip's (v1.3.0), which wrote pallet's layers
// before, byte for byte: the bytes are pgzip's at the same level. The
// stream is cut into blocks of gzipBlockSize, each deflated on its own
// with the last gzipTailSize bytes of the block before as dictionary and
// ended with a sync flush, the last one also with a final block; so the
// bytes do not depend on how many blocks are compressed at once.
const (
	gzipBlockSize = 1 << 20
	gzipTailSize  = 16 << 10
)

// DefaultGzipLevel is the deflate level of gzip layers (klauspost/compress
// flate). Measured per core on the bench's Windows layers (252 MiB) and on
// 250 MiB of real binaries (Go tools, shared libraries), against level 5
// (LegacyGzipLevel): level 3 takes 40 % and 33 % less CPU for blobs 2.2 %
// and 4.5 % larger; level 2 saves 54 % and 48 % for 4.5 % and 7.4 %;
// level 4 only 17 % and 12 % for 2.1 %; level 1 is larger than 2 and no
// faster. Level 3 still writes smaller blobs than ko and crane (Go's
// compress/gzip at BestSpeed: 40.0 % of the real binaries, level 3
// 38.9 %); BuildKit's default (compress/gzip level 6) writes 36.2 %.
// The builder pays for the CPU on every build; --compression zstd is both
// smaller and faster where the runtime can pull it.
const DefaultGzipLevel = 3

// LegacyGzipLevel is the level gzip layers were written with before
// DefaultGzipLevel (flate.DefaultCompression, which klauspost/compress
// takes as 5): what keeps an image pallet wrote then byte for byte.
const LegacyGzipLevel = 5

// gzipKeyName names gzip at level in a layer's cache key: plain "gzip"
// for LegacyGzipLevel, which is what keys said before levels differed, so
// that their entries keep naming the same bytes.
func gzipKeyName(level int) string {
	level = gzipLevelOf(level)
	if level == LegacyGzipLevel {
		return string(Gzip)
	}
	return fmt.Sprintf("%s-%d", Gzip, level)
}

// gzipLevelOf is level with 0 meaning DefaultGzipLevel.
func gzipLevelOf(level int) int {
	if level == 0 {
		return DefaultGzipLevel
	}
	return level
}

// gzipHeader is the header pgzip writes: no name, no comment, the zero
// time's Unix seconds cut to 32 bits as mtime, extra flags 0 (pgzip sets
// them only for levels 1 and 9, which no default uses), OS 255 (unknown).
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0x00, 0x09, 0x6e, 0x88, 0, 255}

// gzipSlot is one compressor: the deflate state, reused block after
// block.
type gzipSlot struct {
	fw    *flate.Writer
	level int
}

// gzipBlock is one block on its way: compressed by a slot into out, then
// written out by the layer's writer, in order.
type gzipBlock struct {
	in, dict []byte
	last     bool
	slot     *gzipSlot
	out      *bytes.Buffer
	ready    chan error
}

// gzipWriter compresses a layer's tar stream with the Compressors'
// slots, several blocks at once, and writes them out in order from a
// goroutine of its own.
type gzipWriter struct {
	c        *Compressors
	w        io.Writer
	level    int
	buf      []byte // the block being filled
	tail     []byte // the dictionary of the next block
	crc      uint32
	size     uint32
	inflight chan struct{} // blocks of this layer not written out yet
	pending  chan *gzipBlock
	done     chan struct{}
	mu       sync.Mutex
	err      error
	closed   bool
}

// newGzipWriter writes a gzip stream to w at level (0 is
// DefaultGzipLevel), compressing up to jobs blocks of it at once (within
// c's bound).
func newGzipWriter(w io.Writer, c *Compressors, jobs, level int) (*gzipWriter, error) {
	level = gzipLevelOf(level)
	if level < 1 || level > 9 {
		return nil, fmt.Errorf("gzip level %d: want 1 to 9", level)
	}
	if level == 1 || level == 9 {
		// The header's extra flags would differ from gzipHeader's.
		return nil, fmt.Errorf("gzip level %d is not supported", level)
	}
	if _, err := w.Write(gzipHeader); err != nil {
		return nil, err
	}
	// One block more than are compressed at once may wait to be written:
	// a block done before the one ahead of it gives its compressor to
	// the next block instead of holding it idle until written (on the
	// bench's DLL layer at 2 jobs, compressors were held so 7-10 % of
	// their time).
	unwritten := max(jobs, 1) + 1
	z := &gzipWriter{c: c, w: w, level: level, inflight: make(chan struct{}, unwritten), pending: make(chan *gzipBlock, unwritten), done: make(chan struct{})}
	z.buf = z.block()
	go z.writeOut()
	return z, nil
}

func (z *gzipWriter) block() []byte {
	if b, ok := z.c.blocks.get(); ok {
		return b[:0]
	}
	return make([]byte, 0, gzipBlockSize)
}

func (z *gzipWriter) Write(p []byte) (int, error) {
	if err := z.failed(); err != nil {
		return 0, err
	}
	if z.closed {
		return 0, errors.New("gzip: write after close")
	}
	n := len(p)
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += uint32(n) // the trailer holds the size modulo 2^32
	for len(p) > 0 {
		k := min(len(p), gzipBlockSize-len(z.buf))
		z.buf = append(z.buf, p[:k]...)
		p = p[k:]
		if len(z.buf) == gzipBlockSize {
			z.submit(false)
			if err := z.failed(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// submit hands the filled block to a compressor, waiting for one when
// this layer has jobs+1 blocks unwritten or c has none free.
func (z *gzipWriter) submit(last bool) {
	b := &gzipBlock{in: z.buf, dict: z.tail, last: last, ready: make(chan error, 1)}
	z.tail = nil
	if !last {
		t, ok := z.c.tails.get()
		if !ok {
			t = make([]byte, 0, gzipTailSize)
		}
		z.tail = append(t[:0], b.in[len(b.in)-gzipTailSize:]...)
		z.buf = z.block()
	}
	z.inflight <- struct{}{}
	z.pending <- b
	z.c.unwritten <- struct{}{}
	z.c.acquire()
	b.slot = z.c.slot(z.level)
	b.out, _ = z.c.outs.get()
	if b.out == nil {
		b.out = new(bytes.Buffer)
	}
	go b.compress(z.c)
}

// slot returns a compressor at level. One kept at another level is left
// to the garbage collector: all but the rare layer use the default.
func (c *Compressors) slot(level int) *gzipSlot {
	if s, ok := c.slots.get(); ok && s.level == level {
		return s
	}
	// NewWriterDict, not NewWriter: the state pgzip compressed each block
	// with, which ResetDict then primes with the block's dictionary.
	fw, err := flate.NewWriterDict(nil, level, nil)
	if err != nil {
		panic(fmt.Sprintf("flate level %d: %v", level, err)) // checked by newGzipWriter
	}
	return &gzipSlot{fw: fw, level: level}
}

// compress deflates the block into its output and gives the compressor
// back at once, not when the block is written out.
func (b *gzipBlock) compress(c *Compressors) {
	s := b.slot
	b.out.Reset()
	// Room for the whole block at once: a new buffer grown by doubling
	// from 64 bytes was copied and cleared at each doubling, a fifth of
	// the CPU of the one layer of a 12 MB Go binary, whose blocks mostly
	// took new buffers. Deflate writes at most a few bytes more than it
	// reads (as stored blocks).
	b.out.Grow(len(b.in) + len(b.in)/16)
	s.fw.ResetDict(b.out, b.dict)
	_, err := s.fw.Write(b.in)
	if err == nil {
		err = s.fw.Flush()
	}
	if err == nil && b.last {
		err = s.fw.Close()
	}
	c.blocks.put(b.in)
	if b.dict != nil {
		c.tails.put(b.dict)
	}
	b.in, b.dict, b.slot = nil, nil, nil
	c.slots.put(s)
	c.release()
	b.ready <- err
}

// writeOut writes the compressed blocks in order and gives their slots
// back. After an error it only drains, so that no submit waits forever.
func (z *gzipWriter) writeOut() {
	defer close(z.done)
	for b := range z.pending {
		err := <-b.ready
		if err == nil && z.failed() == nil {
			_, err = z.w.Write(b.out.Bytes())
		}
		if err != nil {
			z.fail(err)
		}
		z.c.outs.put(b.out)
		<-z.c.unwritten
		<-z.inflight
	}
}

func (z *gzipWriter) fail(err error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.err == nil {
		z.err = err
	}
}

func (z *gzipWriter) failed() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.err
}

// Close compresses the last block (possibly empty, as pgzip does), waits
// for every block to be written and writes the trailer: CRC-32 and size.
func (z *gzipWriter) Close() error {
	if z.closed {
		return z.failed()
	}
	z.closed = true
	if z.failed() == nil {
		z.submit(true)
	} else {
		z.c.blocks.put(z.buf)
	}
	z.buf = nil
	close(z.pending)
	<-z.done
	if z.tail != nil {
		z.c.tails.put(z.tail)
		z.tail = nil
	}
	if err := z.failed(); err != nil {
		return err
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], z.crc)
	binary.LittleEndian.PutUint32(trailer[4:], z.size)
	_, err := z.w.Write(trailer[:])
	return err
}

// abort ends the writer without the trailer, giving back what it holds:
// for a layer that failed before its stream was complete.
func (z *gzipWriter) abort() {
	if z.closed {
		return
	}
	z.fail(errors.New("gzip: aborted"))
	z.Close()
}

// zstdWriter is a pooled zstd encoder, holding one of c's compressors
// for the whole stream.
type zstdWriter struct {
	*zstd.Encoder
	c    *Compressors
	list freeList[*zstd.Encoder]
	done bool
}

// newZstdWriter waits for one of c's compressors and writes a zstd
// stream to w with it. Encoders are reused: Reset starts an independent
// stream whose bytes are those of a new encoder's.
func newZstdWriter(w io.Writer, c *Compressors, jobs int) (*zstdWriter, error) {
	// Above 1, the encoder's concurrency only lets it compress a block
	// while the next is filled: the stream is compressed in order either
	// way, and its bytes do not depend on it.
	conc, list := 1, c.zstdSync
	if jobs > 1 {
		conc, list = 2, c.zstdAsync
	}
	c.acquire()
	enc, ok := list.get()
	if ok {
		enc.Reset(w)
		return &zstdWriter{Encoder: enc, c: c, list: list}, nil
	}
	enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(conc), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		c.release()
		return nil, err
	}
	return &zstdWriter{Encoder: enc, c: c, list: list}, nil
}

func (z *zstdWriter) Close() error {
	if z.done {
		return nil
	}
	err := z.Encoder.Close()
	z.giveBack(err == nil)
	return err
}

// giveBack returns the compressor; the encoder only when it finished its
// stream cleanly, so that no failed stream's state is reused.
func (z *zstdWriter) giveBack(reuse bool) {
	z.done = true
	if reuse {
		z.Encoder.Reset(nil)
		z.list.put(z.Encoder)
	}
	z.c.release()
}

func (z *zstdWriter) abort() {
	if !z.done {
		// Closing waits for the encoder's own goroutine, which may still
		// be writing a block; the stream is discarded either way.
		z.Encoder.Close()
		z.giveBack(false)
	}
}
