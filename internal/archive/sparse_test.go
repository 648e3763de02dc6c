//go:build unix

package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// gnuSparse is an old-GNU sparse tar entry (typeflag 'S') named name, of
// logical size size, whose only data is the byte 'x' at its last offset:
// the rest is a hole, which a tar reader gives as zeros. 1,024 bytes of
// archive for any size.
func gnuSparse(name string, size int64) []byte {
	h := make([]byte, 512)
	copy(h, name)
	copy(h[100:], "0000644\x00")
	copy(h[108:], "0000000\x00")
	copy(h[116:], "0000000\x00")
	tarNumber(h[124:136], 1) // the data archived: one byte
	copy(h[136:], "00000000000\x00")
	h[156] = 'S'
	copy(h[257:], "ustar  \x00")
	// One sparse entry: offset size-1, one byte.
	tarNumber(h[386:398], size-1)
	tarNumber(h[398:410], 1)
	tarNumber(h[483:495], size) // real size
	copy(h[148:156], "        ")
	sum := 0
	for _, b := range h {
		sum += int(b)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	data := make([]byte, 512)
	data[0] = 'x'
	return concat(h, data)
}

// tarNumber writes n into a numeric tar field: octal when it fits,
// base-256 (GNU) otherwise.
func tarNumber(f []byte, n int64) {
	if s := fmt.Sprintf("%0*o", len(f)-1, n); len(s) == len(f)-1 {
		copy(f, s+"\x00")
		return
	}
	clear(f)
	binary.BigEndian.PutUint64(f[len(f)-8:], uint64(n))
	f[0] = 0x80
}

// sparseBomb is a tar of n sparse entries, each of logical size size.
func sparseBomb(n int, size int64) []byte {
	var parts [][]byte
	for i := range n {
		parts = append(parts, gnuSparse(fmt.Sprintf("hole%d", i), size))
	}
	return concat(append(parts, make([]byte, 1024))...)
}

// diskUsage is the length of the regular files under dir, and what they
// take on disk, in bytes.
func diskUsage(t testing.TB, dir string) (size, n int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		size += fi.Size()
		n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size, n
}

// TestHolesTakeNoDisk extracts sparse tar entries, and a gzip bomb of
// zeros: their zeros must read back as written and be counted against
// MaxBytes, but take no disk. A few KiB of archive otherwise filled the
// whole limit, 16 GiB by default, of disk with zeros.
func TestHolesTakeNoDisk(t *testing.T) {
	const size = 16 * mib
	data := sparseBomb(4, size)
	s := newSandbox(t, Tar, data)
	sums := map[string]string{}
	opt := Options{Written: func(p, sum string) { sums[filepath.Base(p)] = sum }}
	if err := Extract(context.Background(), s.src, Tar, s.out, opt); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	want[size-1] = 'x'
	wantSum := sha256.Sum256(want)
	for i := range 4 {
		name := fmt.Sprintf("hole%d", i)
		got, err := os.ReadFile(filepath.Join(s.out, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: content differs from the sparse entry's (%d bytes)", name, len(got))
		}
		if sums[name] != hex.EncodeToString(wantSum[:]) {
			t.Errorf("%s: Written reported %s", name, sums[name])
		}
	}
	// The data blocks, and what the file system keeps for a file.
	if _, used := diskUsage(t, s.out); used > 4*64<<10 {
		t.Fatalf("%d bytes of disk for 4 sparse entries of %d bytes, each with 1 byte of data", used, size)
	}

	// At the default limit: 17 entries of 1 GiB from 17 KiB of tar.
	data = sparseBomb(17, gib)
	s = newSandbox(t, Tar, data)
	start := time.Now()
	err := Extract(context.Background(), s.src, Tar, s.out, Options{})
	want16 := fmt.Sprintf("extract %s: entry \"hole16\": archive expands beyond the limit of %d bytes", s.src, DefaultMaxBytes)
	if err == nil || err.Error() != want16 || !errors.Is(err, ErrLimit) {
		t.Errorf("error = %v\nwant    %s", err, want16)
	}
	logical, used := diskUsage(t, s.out)
	t.Logf("%d-byte sparse bomb: %v to the limit, %d bytes of disk for %d of files", len(data), time.Since(start), used, logical)
	if used > 16*64<<10 {
		t.Errorf("%d bytes of disk written", used)
	}

	// A gzip bomb's zeros are holes too.
	data = gzipZeros(t, tarPrefix(t, nil, "zeros", 64*mib), 64*mib+mib)
	s = newSandbox(t, TarGzip, data)
	if err := Extract(context.Background(), s.src, TarGzip, s.out, Options{}); err != nil {
		t.Fatal(err)
	}
	if size, used := diskUsage(t, s.out); size != 64*mib || used > 64<<10 {
		t.Errorf("%d bytes of disk for %d of zeros, want %d of zeros", used, size, 64*mib)
	}
}

// TestHoleWriterContent writes contents with runs of zeros, in pieces
// of every alignment, and reads back what was written.
func TestHoleWriterContent(t *testing.T) {
	z := func(n int) string { return string(make([]byte, n)) }
	contents := []string{
		"", z(10), z(holeBlock), z(3*holeBlock + 7),
		z(5000) + "a", "a" + z(5000), "a" + z(3*holeBlock) + "b",
		z(holeBlock-1) + "ab" + z(2*holeBlock+1) + "c" + z(holeBlock),
	}
	for i, content := range contents {
		for _, piece := range []int{1, 7, 512, holeBlock - 1, holeBlock, holeBlock + 3, 1 << 20} {
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			w := &holeWriter{f: f}
			for rest := []byte(content); len(rest) > 0; {
				n := min(piece, len(rest))
				if m, err := w.Write(rest[:n]); m != n || err != nil {
					t.Fatalf("Write: %d, %v", m, err)
				}
				rest = rest[n:]
			}
			if err := w.finish(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if got, _ := os.ReadFile(p); string(got) != content {
				t.Errorf("content %d in pieces of %d: read back %d bytes, differing", i, piece, len(got))
			}
		}
	}
}
