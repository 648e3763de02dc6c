package archive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// xzSpec is one block for xzStream.
type xzSpec struct {
	data []byte // what the block decodes to
	// lzma2, when set, is the block's LZMA2 data; otherwise data is
	// compressed.
	lzma2 []byte
	// hdrC and hdrU are the sizes the header declares: 0 for the real
	// size, -1 to leave it out, or a lie.
	hdrC, hdrU int64
}

// xzStream writes one xz stream with the given check type, its blocks
// declaring their sizes (unless told otherwise) as multi-threaded xz
// writes them. The index lists the real sizes.
func xzStream(t testing.TB, check byte, blocks ...xzSpec) []byte {
	t.Helper()
	var b, index bytes.Buffer
	le32 := func(w *bytes.Buffer, v uint32) { binary.Write(w, binary.LittleEndian, v) }
	flags := []byte{0, check}
	b.Write(xzMagic)
	b.Write(flags)
	le32(&b, crc32.ChecksumIEEE(flags))
	index.WriteByte(0)
	index.Write(binary.AppendUvarint(nil, uint64(len(blocks))))
	for _, blk := range blocks {
		lz := blk.lzma2
		if lz == nil {
			var buf bytes.Buffer
			w, err := lzma.Writer2Config{DictCap: 64 << 10}.NewWriter2(&buf)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(blk.data)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			lz = buf.Bytes()
		}
		size := func(decl, real int64) int64 {
			if decl == 0 {
				return real
			}
			return decl
		}
		hc, hu := size(blk.hdrC, int64(len(lz))), size(blk.hdrU, int64(len(blk.data)))
		hdr := []byte{0, 0}
		if hc >= 0 {
			hdr[1] |= 0x40
			hdr = binary.AppendUvarint(hdr, uint64(hc))
		}
		if hu >= 0 {
			hdr[1] |= 0x80
			hdr = binary.AppendUvarint(hdr, uint64(hu))
		}
		hdr = append(hdr, xzLZMA2, 0x01, 16) // 64 KiB dictionary
		for len(hdr)%4 != 0 {
			hdr = append(hdr, 0)
		}
		hdr[0] = byte(len(hdr) / 4)
		b.Write(hdr)
		le32(&b, crc32.ChecksumIEEE(hdr))
		b.Write(lz)
		b.Write(make([]byte, (4-(len(hdr)+4+len(lz))%4)%4))
		var sum []byte
		switch check {
		case 0x01:
			sum = binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(blk.data))
		case 0x04:
			sum = binary.LittleEndian.AppendUint64(nil, crc64.Checksum(blk.data, crc64Table()))
		case 0x0a:
			s := sha256.Sum256(blk.data)
			sum = s[:]
		}
		b.Write(sum)
		unpadded := len(hdr) + 4 + len(lz) + len(sum)
		index.Write(binary.AppendUvarint(nil, uint64(unpadded)))
		index.Write(binary.AppendUvarint(nil, uint64(len(blk.data))))
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

// mixedData is n bytes of text-like lines and runs of random bytes, so
// that blocks compress unevenly and take uneven times to decode.
func mixedData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, 0, n)
	for len(out) < n {
		if r.IntN(4) != 0 {
			out = fmt.Appendf(out, "line %d of %d\n", r.IntN(1000), r.IntN(50))
		} else {
			for range r.IntN(40) {
				out = append(out, byte(r.Uint32()))
			}
		}
	}
	return out[:n]
}

// specs cuts data into blocks of size bytes, the last shorter.
func specs(data []byte, size int) []xzSpec {
	var s []xzSpec
	for len(data) > 0 {
		n := min(size, len(data))
		s = append(s, xzSpec{data: data[:n]})
		data = data[n:]
	}
	return s
}

// decodeXzWith decodes data with workers blocks at a time (1: none
// ahead), returning what was read before any error.
func decodeXzWith(data []byte, workers int) ([]byte, error) {
	z := newXzReader(bufio.NewReader(bytes.NewReader(data)), DefaultMaxWindow)
	z.workers = workers
	return io.ReadAll(z)
}

// agree decodes data one block at a time and several ahead, and fails
// unless both give the same error and, without one, the same bytes. With
// one, how much comes out before it depends on how the decoder is read
// even one block at a time, so only the common part must match.
func agree(t *testing.T, what string, data []byte) ([]byte, error) {
	t.Helper()
	seq, seqErr := decodeXzWith(data, 1)
	for _, w := range []int{2, 8} {
		par, parErr := decodeXzWith(data, w)
		if fmt.Sprint(parErr) != fmt.Sprint(seqErr) {
			t.Fatalf("%s, %d workers: error %v, one at a time %v", what, w, parErr, seqErr)
		}
		n := min(len(par), len(seq))
		if !bytes.Equal(par[:n], seq[:n]) || seqErr == nil && len(par) != len(seq) {
			t.Fatalf("%s, %d workers: %d bytes differ from the %d read one at a time", what, w, len(par), len(seq))
		}
	}
	return seq, seqErr
}

func TestXzParallelMatchesSequential(t *testing.T) {
	data := mixedData(1, 200<<10)
	for _, check := range []byte{0x00, 0x01, 0x04, 0x0a} {
		t.Run(fmt.Sprintf("check %#x", check), func(t *testing.T) {
			file := xzStream(t, check, specs(data, 24<<10)...)
			got, err := agree(t, "intact", file)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("decoded %d bytes, %v; want %d bytes", len(got), err, len(data))
			}
			xr, err := xz.NewReader(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if ref, err := io.ReadAll(xr); err != nil || !bytes.Equal(ref, data) {
				t.Fatalf("xz.Reader disagrees: %d bytes, %v", len(ref), err)
			}
		})
	}
}

// TestXzParallelDamage damages a multi-block file in many places, alone
// and among other streams: the reader must give the same bytes and error
// however many blocks it decodes at a time.
func TestXzParallelDamage(t *testing.T) {
	data := mixedData(2, 32<<10)
	file := xzStream(t, 0x04, specs(data, 4<<10)...)
	other := xzStream(t, 0x01, specs(data[:10<<10], 4<<10)...)
	for i := range len(file) {
		if i < 64 || i >= len(file)-96 || i%131 == 0 {
			bad := bytes.Clone(file)
			bad[i] ^= 0x04
			got, err := agree(t, fmt.Sprintf("bit flip at %d", i), bad)
			if err == nil && !bytes.Equal(got, data) {
				t.Errorf("bit flip at %d decoded to wrong data without an error", i)
			}
		}
	}
	for n := 0; n < len(file); n += 257 {
		if _, err := agree(t, fmt.Sprintf("truncation to %d", n), file[:n]); err == nil {
			t.Errorf("truncation to %d bytes went unnoticed", n)
		}
	}
	for name, f := range map[string][]byte{
		"streams":          concat(file, make([]byte, 4), other, file),
		"padding of 3":     concat(file, make([]byte, 3), other),
		"trailing garbage": concat(file, other, []byte("junk")),
		"index of another": concat(file[:len(file)-len(other)], other[len(other)-60:]),
	} {
		agree(t, name, f)
	}
}

// corruptLZMA2 is block data whose LZMA2 is damaged some way in, so that
// the block fails after decoding part of itself.
func corruptLZMA2(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := lzma.Writer2Config{DictCap: 64 << 10}.NewWriter2(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	lz := buf.Bytes()
	lz[len(lz)/2] ^= 0x55
	return lz
}

func TestXzParallelErrors(t *testing.T) {
	const size = 32 << 10
	data := mixedData(3, 8*size)
	blocks := func(edit func(s []xzSpec)) []byte {
		s := specs(data, size)
		edit(s)
		return xzStream(t, 0x0a, s...)
	}
	tests := []struct {
		name    string
		file    []byte
		want    string
		through int // blocks before the error that must come out whole
	}{
		{
			name:    "corrupt data in block 4",
			file:    blocks(func(s []xzSpec) { s[3].lzma2 = corruptLZMA2(t, s[3].data) }),
			want:    "xz: block 4: ",
			through: 3,
		},
		{
			name: "block 5 holds more than it declares",
			file: blocks(func(s []xzSpec) { s[4].hdrU = size - 2048 }),
			want: "xz: corrupt input: block holds more than its declared 30720 bytes", through: 4,
		},
		{
			name: "block 3 holds less than it declares",
			file: blocks(func(s []xzSpec) { s[2].hdrU = size + 1 }),
			want: "xz: corrupt input: block 3: 32768 bytes, header says 32769", through: 2,
		},
		{
			name: "block 6 declares too much compressed data",
			file: blocks(func(s []xzSpec) { s[5].hdrC = 1 << 20 }),
			want: "xz: corrupt input: block 6: ", through: 5,
		},
		{
			name: "block 2 declares 1 TiB",
			file: blocks(func(s []xzSpec) { s[1].hdrU = 1 << 40 }),
			want: "xz: corrupt input: block 2: 32768 bytes, header says 1099511627776", through: 1,
		},
	}
	// A check over other data than the block holds.
	file := blocks(func([]xzSpec) {})
	sum := sha256.Sum256(data[6*size : 7*size])
	file[bytes.Index(file, sum[:])] ^= 1
	tests = append(tests, struct {
		name    string
		file    []byte
		want    string
		through int
	}{"block 7 checksum", file, "xz: block 7: checksum mismatch", 6})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agree(t, tt.name, tt.file)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q...", err, tt.want)
			}
			if n := tt.through * size; len(got) < n || !bytes.Equal(got[:n], data[:n]) {
				t.Fatalf("%d bytes before the error, want the %d of the blocks before it", len(got), n)
			}
			if !bytes.Equal(got, data[:len(got)]) {
				t.Fatal("wrong data before the error")
			}
		})
	}
}

// TestXzParallelBounds checks that declared sizes decide nothing beyond
// the bound: a block claiming more is decoded as it is read, allocating
// nothing for the claim.
func TestXzParallelBounds(t *testing.T) {
	data := mixedData(4, 256<<10)
	s := specs(data, 64<<10)
	s[1].hdrU = xzMaxJob + 1
	s[2].hdrC = xzMaxJob + 1
	file := xzStream(t, 0x01, s...)
	z := newXzReader(bufio.NewReader(bytes.NewReader(file)), DefaultMaxWindow)
	z.workers = 4
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := io.ReadAll(z)
	runtime.ReadMemStats(&after)
	if want := "xz: corrupt input: block 2: 65536 bytes, header says 67108865"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("decoding allocated %d bytes", n)
	}

	s = specs(data, 64<<10)
	s[2].hdrC = xzMaxJob + 1
	file = xzStream(t, 0x01, s...)
	if _, err := decodeXzWith(file, 4); err == nil || !strings.HasPrefix(err.Error(), "xz: corrupt input: block 3: ") {
		t.Fatalf("error = %v", err)
	}

	// Claims within the bound, decoded ahead, cost only what the input
	// backs.
	s = specs(data, 64<<10)
	for i := 1; i < len(s); i++ {
		s[i].hdrC, s[i].hdrU = xzMaxJob, xzMaxJob
	}
	file = xzStream(t, 0x01, s...)
	z = newXzReader(bufio.NewReader(bytes.NewReader(file)), DefaultMaxWindow)
	z.workers = 4
	runtime.ReadMemStats(&before)
	_, err = io.ReadAll(z)
	for _, it := range z.queue {
		<-it.job.done
	}
	runtime.ReadMemStats(&after)
	if want := "xz: corrupt input: block 2: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want %q...", err, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("decoding allocated %d bytes", n)
	}
}

// waitGoroutines waits for the goroutines to come back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestXzParallelGoroutines(t *testing.T) {
	// Blocks of zeros decode slowly enough for the jobs after a failed
	// block to be caught running.
	zeros := make([]byte, 1<<20)
	var s []xzSpec
	for range 10 {
		s = append(s, xzSpec{data: zeros, lzma2: append(lzma2Zeros(t, 1<<20), 0)})
	}
	s[1].lzma2 = []byte{0x03, 0} // not a chunk: fails at once
	file := xzStream(t, 0x04, s...)
	base := runtime.NumGoroutine()

	z := newXzReader(bufio.NewReader(bytes.NewReader(file)), DefaultMaxWindow)
	z.workers = 8
	_, err := io.Copy(io.Discard, z)
	if err == nil || !strings.HasPrefix(err.Error(), "xz: block 2: ") {
		t.Fatalf("error = %v, want block 2's", err)
	}
	stopped := 0
	for _, it := range z.queue[1:] {
		<-it.job.done
		if errors.Is(it.job.err, errXzStopped) {
			stopped++
		}
	}
	if stopped == 0 {
		t.Errorf("no job after the failed block was stopped")
	}
	waitGoroutines(t, base)

	// A reader left part way through leaves nothing running.
	s[1].lzma2 = nil
	z = newXzReader(bufio.NewReader(bytes.NewReader(xzStream(t, 0x04, s...))), DefaultMaxWindow)
	z.workers = 4
	if _, err := io.CopyN(io.Discard, z, 3<<20/2); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, base)
}

// TestXzParallelXzUtils decodes files that multi-threaded xz wrote.
func TestXzParallelXzUtils(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("no xz:", err)
	}
	data := mixedData(5, 512<<10)
	for _, args := range [][]string{
		{"-T2", "--block-size=64KiB", "--check=crc64"},
		{"-T2", "--block-size=50000", "--check=sha256", "-1"},
		{"-T1", "--block-size=100KiB", "--check=crc32"}, // no sizes in the headers
	} {
		cmd := exec.Command("xz", append(args, "-c")...)
		cmd.Stdin = bytes.NewReader(data)
		file, err := cmd.Output()
		if err != nil {
			t.Fatalf("xz %v: %v", args, err)
		}
		if got, err := agree(t, strings.Join(args, " "), file); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("xz %v: decoded %d bytes, %v", args, len(got), err)
		}
	}
}

// BenchmarkXzDecode decodes PALLET_XZ_BENCH (an .xz file), or 32 MiB
// that xz -T2 compresses here, one block at a time and ahead.
func BenchmarkXzDecode(b *testing.B) {
	var file []byte
	if name := os.Getenv("PALLET_XZ_BENCH"); name != "" {
		var err error
		if file, err = os.ReadFile(name); err != nil {
			b.Fatal(err)
		}
	} else {
		if _, err := exec.LookPath("xz"); err != nil {
			b.Skip("no xz and no PALLET_XZ_BENCH:", err)
		}
		cmd := exec.Command("xz", "-T2", "--block-size=4MiB", "-c")
		cmd.Stdin = bytes.NewReader(mixedData(6, 32<<20))
		var err error
		if file, err = cmd.Output(); err != nil {
			b.Fatal(err)
		}
	}
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				z := newXzReader(bufio.NewReaderSize(bytes.NewReader(file), 64<<10), DefaultMaxWindow)
				z.workers = w
				n, err := io.Copy(io.Discard, z)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(n)
			}
		})
	}
}
