package layer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/pgzip"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/tree"
)

// pgzipBytes is what pgzip v1.3.0, which wrote pallet's gzip layers
// before, makes of data with Build's settings at level.
func pgzipBytes(t *testing.T, data []byte, chunks []int, level int) []byte {
	t.Helper()
	var out bytes.Buffer
	pw, err := pgzip.NewWriterLevel(&out, level)
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.SetConcurrency(1<<20, 2); err != nil {
		t.Fatal(err)
	}
	writeChunks(t, pw, data, chunks)
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeChunks(t *testing.T, w io.Writer, data []byte, chunks []int) {
	t.Helper()
	for i := 0; len(data) > 0; i++ {
		n := min(chunks[i%len(chunks)], len(data))
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
}

// testData is n bytes, random where compressible is false, else runs of
// random bytes and of copies from up to 20000 bytes back: matches that
// reach into a block's dictionary, to its oldest byte.
func testData(seed uint64, n int, compressible bool) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := 0; i < n; {
		run := min(8+rng.IntN(24), n-i)
		if from := i - 1 - rng.IntN(20000); compressible && from >= 0 && rng.IntN(3) > 0 {
			for k := range run {
				b[i+k] = b[from+k]
			}
		} else {
			for k := range run {
				b[i+k] = byte(rng.Uint32())
			}
		}
		i += run
	}
	return b
}

// The gzip stream is pgzip's, byte for byte, at every size around the
// block and dictionary boundaries, however it is written and however many
// blocks are compressed at once: layer digests depend on it.
func TestGzipFramingIsPgzips(t *testing.T) {
	const mib = 1 << 20
	sizes := []int{0, 1, 1000, gzipTailSize - 1, gzipTailSize, gzipTailSize + 1, mib - 1, mib, mib + 1, 2*mib + gzipTailSize + 1}
	// Each compressor bound and job count once per size, taking turns,
	// and every combination on the largest.
	configs := [][2]int{{1, 1}, {3, 2}, {2, 4}, {1, 3}}
	for i, size := range sizes {
		data := testData(uint64(size), size, i%2 == 1)
		chunks := []int{512, 7, 100000, mib, 3 * mib}
		want := pgzipBytes(t, data, chunks, DefaultGzipLevel)
		for j, cf := range configs {
			if j != i%len(configs) && i != len(sizes)-1 {
				continue
			}
			limit, jobs := cf[0], cf[1]
			var got bytes.Buffer
			z, err := newGzipWriter(&got, NewCompressors(limit), jobs, 0)
			if err != nil {
				t.Fatal(err)
			}
			writeChunks(t, z, data, chunks)
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%d bytes, %d compressors, %d jobs: %d bytes differ from pgzip's %d", size, limit, jobs, got.Len(), len(want))
			}
		}
	}
}

// Compressors shared by layers at different levels give each layer the
// bytes of its own level, pgzip's at that level: a compressor kept from
// one level is not reused at another. pgzip's DefaultCompression is
// LegacyGzipLevel, what pallet wrote before DefaultGzipLevel.
func TestGzipLevelsShareCompressors(t *testing.T) {
	data := testData(3, 3<<20+5, true)
	chunks := []int{100000}
	legacy := pgzipBytes(t, data, chunks, pgzip.DefaultCompression)
	if !bytes.Equal(legacy, pgzipBytes(t, data, chunks, LegacyGzipLevel)) {
		t.Fatal("pgzip's default level is not LegacyGzipLevel")
	}
	want := map[int][]byte{0: pgzipBytes(t, data, chunks, DefaultGzipLevel), LegacyGzipLevel: legacy, 4: pgzipBytes(t, data, chunks, 4)}
	if bytes.Equal(want[0], legacy) {
		t.Fatal("the default level writes the legacy bytes")
	}
	c := NewCompressors(2)
	for _, level := range []int{LegacyGzipLevel, 0, 4, 0, LegacyGzipLevel} {
		var got bytes.Buffer
		z, err := newGzipWriter(&got, c, 2, level)
		if err != nil {
			t.Fatal(err)
		}
		writeChunks(t, z, data, chunks)
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want[level]) {
			t.Errorf("level %d: %d bytes differ from pgzip's %d", level, got.Len(), len(want[level]))
		}
	}
	for _, level := range []int{-1, 1, 9, 10} {
		if _, err := newGzipWriter(io.Discard, c, 1, level); err == nil {
			t.Errorf("level %d accepted", level)
		}
	}
}

// writeFile writes content to a new file under dir and returns a tree
// holding it as data/NAME.
func fileTree(t *testing.T, dir, name string, content []byte) *tree.Tree {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := tree.New()
	if err := tr.Add(tree.Entry{Path: "data/" + name, Kind: tree.File, Mode: 0o644, Source: p, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	return tr
}

// Compressors reused from one layer to the next, the gzip slots and the
// zstd encoders, carry nothing over: each layer's bytes are those of
// fresh ones.
func TestReusedCompressorsKeepTheBytes(t *testing.T) {
	dir := t.TempDir()
	trees := []*tree.Tree{
		fileTree(t, dir, "a", testData(1, 3<<20+5, true)),
		fileTree(t, dir, "b", testData(2, 1<<20+99, false)),
		fileTree(t, dir, "c", testData(3, 70000, true)),
	}
	for _, comp := range []Compression{Gzip, Zstd} {
		for _, jobs := range []int{1, 3} {
			fresh := make([]string, len(trees))
			for i, tr := range trees {
				fresh[i] = digestOf(t, tr, Options{Compression: comp, Jobs: jobs, Compressors: NewCompressors(1)})
			}
			shared := NewCompressors(1)
			for round := range 3 {
				for i, tr := range trees {
					if got := digestOf(t, tr, Options{Compression: comp, Jobs: jobs, Compressors: shared}); got != fresh[i] {
						t.Errorf("%s, %d jobs, round %d, tree %d: %s after reuse, %s fresh", comp, jobs, round, i, got, fresh[i])
					}
				}
			}
		}
	}
}

func digestOf(t *testing.T, tr *tree.Tree, opt Options) string {
	t.Helper()
	l, err := Build(tr, t.TempDir(), opt)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := l.Digest()
	return d.Hex
}

// Many layers written at once share the compressors' bound: the memory in
// use stays that of a few blocks, not of every layer's own compressors
// (before, each layer brought Jobs+1 of them, about 3 MiB each with
// gzip, and zstd encoders of 18 MiB).
func TestConcurrentLayersShareTheBound(t *testing.T) {
	dir := t.TempDir()
	const layers = 8
	trees := make([]*tree.Tree, layers)
	for i := range trees {
		trees[i] = fileTree(t, dir, fmt.Sprint(i), testData(uint64(i), 6<<20, false))
	}
	for _, comp := range []Compression{Gzip, Zstd} {
		c := NewCompressors(2)
		peak := heapPeak(t, func() {
			var wg sync.WaitGroup
			for _, tr := range trees {
				wg.Add(1)
				go func() {
					defer wg.Done()
					digestOf(t, tr, Options{Compression: comp, Jobs: 8, Compressors: c})
				}()
			}
			wg.Wait()
		})
		// Two compressors (gzip: 2 × 1 MiB of deflate state and 4
		// blocks compressed or waiting to be written out, 4 MiB; zstd:
		// 2 × 18 MiB), a block filling and one waiting per layer (8 × 2
		// MiB), free blocks kept for reuse (4 MiB), and room for the
		// garbage collector's timing: 154 MiB (gzip) and 126 MiB (zstd)
		// before the bound.
		limit := uint64(48 << 20)
		if comp == Zstd {
			limit = 64 << 20
		}
		if peak > limit {
			t.Errorf("%s: %d layers at once had %d MiB of heap in use at the peak, want at most %d MiB", comp, layers, peak>>20, limit>>20)
		}
		t.Logf("%s: peak heap growth %.1f MiB", comp, float64(peak)/(1<<20))
	}
}

// heapPeak runs fn and returns the largest growth of the heap in use
// over what it was before, sampled every millisecond.
func heapPeak(t *testing.T, fn func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-sampled
	return peak.Load()
}

// A layer that fails half-way gives its compressors back: with a bound
// of one, the next layer would wait forever otherwise.
func TestFailedLayerGivesCompressorsBack(t *testing.T) {
	dir := t.TempDir()
	good := fileTree(t, dir, "good", testData(1, 3<<20, false))
	for _, comp := range []Compression{Gzip, Zstd} {
		c := NewCompressors(1)
		for i := range 3 {
			bad := fileTree(t, dir, "bad", testData(2, 3<<20, false))
			e, _ := bad.Get("data/bad")
			// The file grows after the tree was made: the layer fails
			// once 3 MiB of it were compressed.
			if err := os.WriteFile(e.Source, testData(2, 4<<20, false), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Build(bad, t.TempDir(), Options{Compression: comp, Jobs: 2, Compressors: c}); err == nil {
				t.Fatalf("%s: a file that changed size gave no error", comp)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Build(good, t.TempDir(), Options{Compression: comp, Jobs: 2, Compressors: c})
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s, round %d: %v", comp, i, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s, round %d: the layer after a failed one is still waiting for a compressor", comp, i)
			}
		}
	}
}

type failingWriter struct{ left int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errors.New("disk full")
	}
	w.left -= len(p)
	return len(p), nil
}

// An error writing the blob reaches the layer's writer, which stops, and
// the compressors are given back.
func TestGzipWriteErrorStops(t *testing.T) {
	c := NewCompressors(1)
	z, err := newGzipWriter(&failingWriter{left: 100 << 10}, c, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := testData(5, 1<<20, false)
	var werr error
	for range 8 {
		if _, werr = z.Write(data); werr != nil {
			break
		}
	}
	cerr := z.Close()
	if werr == nil && cerr == nil {
		t.Fatal("no error from a blob that could not be written")
	}
	for _, err := range []error{werr, cerr} {
		if err != nil && err.Error() != "disk full" {
			t.Errorf("got %v, want the write's error", err)
		}
	}
	if n := len(c.tokens); n != 0 {
		t.Errorf("%d compressor(s) still taken", n)
	}
}

// A file whose digest Known gives, equal to Expect's, is copied without
// being hashed: Build takes a digest its content does not have (which it
// would refuse if it hashed the file). Known sees the file's own status,
// and a digest other than Expect's is not taken.
func TestKnownDigestIsNotHashedAgain(t *testing.T) {
	dir := t.TempDir()
	tr := tree.New()
	var sources []string
	for i, size := range []int{10, 200 << 10} {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, testData(uint64(i), size, true), 0o644); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, p)
		if err := tr.Add(tree.Entry{Path: fmt.Sprint("f", i), Kind: tree.File, Mode: 0o644, Source: p, Size: int64(size)}); err != nil {
			t.Fatal(err)
		}
	}
	claimed := strings.Repeat("ab", 32) // no file's digest
	expect := func(string) string { return claimed }
	asked := map[string]bool{}
	known := func(source string, info fs.FileInfo) (string, bool) {
		if now, err := os.Stat(source); err != nil || !os.SameFile(now, info) || now.Size() != info.Size() {
			t.Errorf("%s: Known was given another file's status", source)
		}
		asked[source] = true
		return claimed, true
	}
	if _, err := Build(tr, t.TempDir(), Options{Expect: expect, Known: known}); err != nil {
		t.Fatalf("a known digest was checked again: %v", err)
	}
	if len(asked) != len(sources) {
		t.Errorf("Known was asked about %d of %d files", len(asked), len(sources))
	}
	if _, err := Build(tr, t.TempDir(), Options{Expect: expect}); err == nil {
		t.Fatal("without Known, the wrong digest passed: the case above proves nothing")
	}
	other := func(string, fs.FileInfo) (string, bool) { return strings.Repeat("cd", 32), true }
	if _, err := Build(tr, t.TempDir(), Options{Expect: expect, Known: other}); err == nil {
		t.Error("a known digest other than the expected one was taken")
	}
}

// A file whose digest is known but whose status changes before it has
// been read (here a chmod, which sets the change time) fails the layer:
// what was read may not be what was hashed.
func TestKnownDigestNeedsAnUntouchedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	content := testData(1, 1000, true)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	want := hex.EncodeToString(sum[:])
	tr := tree.New()
	if err := tr.Add(tree.Entry{Path: "f", Kind: tree.File, Mode: 0o644, Source: p, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	if changeTime(mustStat(t, p)) == 0 {
		t.Skip("no change time on this system")
	}
	known := func(string, fs.FileInfo) (string, bool) {
		time.Sleep(20 * time.Millisecond) // past the change time's granularity
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return want, true
	}
	_, err := Build(tr, t.TempDir(), Options{Expect: func(string) string { return want }, Known: known})
	if err == nil || !strings.Contains(err.Error(), "changed while the build read it") {
		t.Errorf("got %v, want the file reported changed", err)
	}
}

func mustStat(t *testing.T, p string) fs.FileInfo {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A status change between the two stats of a read (here a chmod, which
// sets the change time) means the digest may be of neither version.
func TestSameStatusSeesAChange(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := f.Stat()
	b, _ := f.Stat()
	if !sameStatus(a, b) {
		t.Fatal("two stats of an untouched file differ")
	}
	if changeTime(a) == 0 {
		t.Skip("no change time on this system")
	}
	time.Sleep(20 * time.Millisecond) // past the change time's granularity
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := f.Stat()
	if sameStatus(a, c) {
		t.Error("a file whose status changed in between counts as untouched")
	}
}

// A layer's cache key names its gzip level, so that no entry written at
// one level is taken for another; the legacy level keeps the part keys
// had before levels differed, so that those entries still name the same
// bytes.
func TestKeyNamesTheGzipLevel(t *testing.T) {
	tr := fileTree(t, t.TempDir(), "f", []byte("content"))
	digest := func(string, tree.Stamp) (string, error) { return strings.Repeat("0", 64), nil }
	part := func(opt Options) string {
		parts, err := Key(tr, opt, digest)
		if err != nil {
			t.Fatal(err)
		}
		return parts[2]
	}
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{}, "gzip-3"},
		{Options{Compression: Gzip}, "gzip-3"},
		{Options{Compression: Gzip, GzipLevel: DefaultGzipLevel}, "gzip-3"},
		{Options{Compression: Gzip, GzipLevel: LegacyGzipLevel}, "gzip"},
		{Options{Compression: Gzip, GzipLevel: 4}, "gzip-4"},
		{Options{Compression: Zstd}, "zstd"},
		{Options{Compression: Zstd, GzipLevel: 4}, "zstd"},
	} {
		if got := part(tc.opt); got != tc.want {
			t.Errorf("%+v: compression part %q, want %q", tc.opt, got, tc.want)
		}
	}
}

// DiffIDOf reads back the diff ID Build gave, for either compression, and
// fails on a blob that is not in the compression it is asked for.
func TestDiffIDOf(t *testing.T) {
	tr := fileTree(t, t.TempDir(), "f", testData(7, 1<<20, false))
	for _, comp := range []Compression{Gzip, Zstd} {
		l, err := Build(tr, t.TempDir(), Options{Compression: comp})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := l.DiffID()
		path := l.(*File).Path
		if got, err := DiffIDOf(path, comp); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", comp, got, err, want)
		}
		other := Zstd
		if comp == Zstd {
			other = Gzip
		}
		if got, err := DiffIDOf(path, other); err == nil {
			t.Errorf("%s blob read as %s: %v", comp, other, got)
		}
		// DiffIDWithin gives the same within the limits, and refuses a
		// blob expanding past them.
		if got, err := DiffIDWithin(context.Background(), path, comp, archive.Options{}); err != nil || got != want {
			t.Errorf("%s within the default limits: %v, %v; want %v", comp, got, err, want)
		}
		if got, err := DiffIDWithin(context.Background(), path, comp, archive.Options{MaxBytes: 1 << 19}); !errors.Is(err, archive.ErrLimit) {
			t.Errorf("%s blob of 1 MiB within 512 KiB: %v, %v", comp, got, err)
		}
	}
}

// NewCompressor, which the bench times as the limit a build could reach,
// writes of a layer's tar the very blob Build writes: it is the same
// compressor, not one like it.
func TestNewCompressorWritesBuildsBlob(t *testing.T) {
	tr := fileTree(t, t.TempDir(), "a", testData(4, 2<<20+17, true))
	for _, comp := range []Compression{Gzip, Zstd} {
		l, err := Build(tr, t.TempDir(), Options{Compression: comp, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		zw, err := NewCompressor(h, Options{Compression: comp, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(zw, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		want, _ := l.Digest()
		if got := hex.EncodeToString(h.Sum(nil)); got != want.Hex {
			t.Errorf("%s: NewCompressor wrote sha256:%s of the layer's tar, Build sha256:%s", comp, got, want.Hex)
		}
	}
}
