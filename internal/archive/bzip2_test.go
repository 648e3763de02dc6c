package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// bzip2Bytes is data compressed by the bzip2 program, in one stream.
func bzip2Bytes(t testing.TB, data []byte, args ...string) []byte {
	t.Helper()
	return fixture.Bzip2(t, data, args...)
}

// bzip2Streams is data as pbzip2 and lbzip2 write it: cut into pieces of
// size bytes, each its own bzip2 stream, the streams concatenated.
func bzip2Streams(t testing.TB, data []byte, size int) []byte {
	t.Helper()
	var out []byte
	for len(data) > 0 {
		n := min(size, len(data))
		out = append(out, bzip2Bytes(t, data[:n], "-1")...)
		data = data[n:]
	}
	return out
}

// bzip2Zeros is prefix and n zero bytes (a multiple of 1 MiB) as
// concatenated bzip2 streams: prefix's, then one of 1 MiB of zeros
// repeated, so that a bomb of gigabytes costs one small compression.
func bzip2Zeros(t testing.TB, prefix []byte, n int64) []byte {
	t.Helper()
	if n%mib != 0 {
		t.Fatalf("bzip2Zeros: %d is not a multiple of 1 MiB", n)
	}
	return concat(bzip2Bytes(t, prefix), bytes.Repeat(bzip2Bytes(t, make([]byte, mib)), int(n/mib)))
}

// zeros1G is testdata/zeros-1g.tar.bz2: a tar of one file, "zeros", of
// 1 GiB of zero bytes, in one bzip2 stream of 850 bytes. Made with
// truncate -s 1G zeros; tar --format=ustar --owner=0 --group=0
// --numeric-owner --mtime=@0 --mode=0644 -cf - zeros | bzip2 -9
// (bzip2 1.0.8, GNU tar 1.34; 12 s, which is why it is kept).
func zeros1G(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "zeros-1g.tar.bz2"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBzip2AsGNUTar: a .tar.bz2 as bzip2 writes it (GNU tar -j), as
// pbzip2 writes it (a stream per piece, concatenated) and as lbzip2 does
// (one stream of many blocks), unpacks
// to what GNU tar unpacks of the same file, under each name bzip2 tars
// go by.
func TestBzip2AsGNUTar(t *testing.T) {
	gnuTarPath(t)
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"busybox-1.36.1/Makefile":          strings.Repeat("all: busybox\n", 4000),
		"busybox-1.36.1/LICENSE":           "GPL-2.0\n",
		"busybox-1.36.1/scripts/gen.sh":    "#!/bin/sh\necho gen\n",
		"busybox-1.36.1/include/applets.h": string(seqOutput()),
		// Past bzip2 -1's 100 kB blocks: lbzip2 writes one stream of
		// many blocks.
		"busybox-1.36.1/docs/BusyBox.txt": strings.Repeat(string(seqOutput()), 20),
	})
	if err := os.Chmod(filepath.Join(src, "busybox-1.36.1/scripts/gen.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("Makefile", filepath.Join(src, "busybox-1.36.1/GNUmakefile")); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	made := filepath.Join(work, "made.tar.bz2")
	fixture.NeedBzip2(t) // GNU tar -j runs it
	gnuTar(t, "-cjf", made, "-C", src, "busybox-1.36.1")
	one, err := os.ReadFile(made)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(work, "plain.tar")
	gnuTar(t, "-cf", plain, "-C", src, "busybox-1.36.1")
	tarData, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks after the first start anywhere in a byte: count them by
	// what each holds, 100 kB at -1.
	if len(tarData) < 300_000 {
		t.Fatalf("the tar is %d bytes, want several blocks of 100 kB", len(tarData))
	}
	blocks := bzip2Bytes(t, tarData, "-1")
	many := bzip2Streams(t, tarData, 70000)
	if n := bytes.Count(many, []byte("BZh1")); n < 4 {
		t.Fatalf("%d streams, want several", n)
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"busybox-1.36.1.tar.bz2", one},
		{"busybox-1.36.1.tbz2", one},
		{"x.TBZ", one},
		{"pbzip2.tar.bz2", many},
		{"blocks.tar.bz2", blocks},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := Detect(tt.name)
			if !ok || f != TarBzip2 {
				t.Fatalf("Detect(%q) = %q, %v", tt.name, f, ok)
			}
			if got, name := Sniff(tt.data[:SniffLen]); got != TarBzip2 || name != "bzip2" {
				t.Errorf("Sniff = %q, %q", got, name)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, tt.name)
			if err := os.WriteFile(file, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
			for _, d := range []string{ours, theirs} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := Extract(context.Background(), file, f, ours, Options{}); err != nil {
				t.Fatal(err)
			}
			gnuUntar(t, file, theirs)
			diffTrees(t, shapes(snapshot(t, ours)), shapes(snapshot(t, theirs)))
		})
	}
}

// writeTree writes files (slash paths to content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBzip2Bomb: 1 GiB of zeros in 850 bytes is refused once MaxBytes is
// decompressed, without reading on, holding more than the decoder's one
// block, or writing past the limit; the same file, its entry skipped and
// nothing written, stops when the build is cancelled, where nothing but
// the output's count could notice (the whole file is read at once).
func TestBzip2Bomb(t *testing.T) {
	data := zeros1G(t)
	t.Run("limit", func(t *testing.T) {
		s := newSandbox(t, TarBzip2, data)
		var err error
		start := time.Now()
		alloc := allocated(func() {
			err = Extract(context.Background(), s.src, TarBzip2, s.out, Options{MaxBytes: mib})
		})
		want := "extract " + s.src + `: entry "zeros": archive expands beyond the limit of 1048576 bytes`
		if err == nil || err.Error() != want || !errors.Is(err, ErrLimit) {
			t.Errorf("error = %v\nwant    %s", err, want)
		}
		// The decoder's block (900 kB of 4-byte entries) and buffers.
		if alloc > 16*mib {
			t.Errorf("allocated %d bytes", alloc)
		}
		if written := treeSize(t, s.out); written > mib {
			t.Errorf("%d bytes written despite the limit", written)
		}
		t.Logf("refused in %v, %d bytes allocated", time.Since(start), alloc)
	})
	t.Run("cancelled", func(t *testing.T) {
		s := newSandbox(t, TarBzip2, data)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		err := Extract(ctx, s.src, TarBzip2, s.out, Options{Include: []string{"keep"}})
		took := time.Since(start)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
		// Decoding the whole gigabyte takes seconds (tens under -race).
		if took > 2*time.Second {
			t.Errorf("Extract returned %v after it was cancelled", took-100*time.Millisecond)
		}
	})
	t.Run("decompress", func(t *testing.T) {
		rc, err := Decompress(context.Background(), bytes.NewReader(data), TarBzip2, Options{MaxBytes: mib})
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		n, err := io.Copy(io.Discard, rc)
		if !errors.Is(err, ErrLimit) || n > mib+1 {
			t.Errorf("read %d bytes, then %v; want the limit", n, err)
		}
	})
}

// TestBzip2Damage: a .tar.bz2 whose stream is cut short, or whose block
// fails its CRC, is refused naming the archive and saying it is bzip2's
// fault, as bzip2 -d and GNU tar refuse it; bytes after the last stream
// are passed over, as bzip2 -d warns of them and GNU tar unpacks the file.
func TestBzip2Damage(t *testing.T) {
	tarData := tarBytes(t, []ent{{name: "a", body: strings.Repeat("a\n", 3000)}, {name: "b", body: "b\n"}})
	good := bzip2Bytes(t, tarData)
	badCRC := bytes.Clone(good)
	badCRC[10] ^= 0x01 // the first block's CRC follows its 6-byte magic
	for _, tt := range []struct {
		name    string
		data    []byte
		wantErr string // "" for an archive GNU tar unpacks too
	}{
		{"cut short", good[:len(good)-5], "bzip2 stream cut short: unexpected EOF"},
		{"cut inside the block", good[:len(good)/2], "bzip2 stream cut short: unexpected EOF"},
		{"block CRC", badCRC, "bzip2 data invalid: block checksum mismatch"},
		{"garbage after the stream", concat(good, []byte("garbage\n")), ""},
		{"zeros after the stream", concat(good, make([]byte, 512)), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, TarBzip2, tt.data)
			err := Extract(context.Background(), s.src, TarBzip2, s.out, Options{})
			gnuErr := exec.Command(gnuTarPath(t), "-xjf", s.src, "-C", s.canary).Run()
			if tt.wantErr == "" {
				if err != nil || gnuErr != nil {
					t.Fatalf("pallet: %v; GNU tar: %v", err, gnuErr)
				}
				diffTrees(t, shapes(snapshot(t, s.out)), shapes(snapshot(t, s.canary)))
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "extract "+s.src+": ") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v\nwant it to name the archive and say %q", err, tt.wantErr)
			}
			if gnuErr == nil {
				t.Errorf("GNU tar unpacked it")
			}
		})
	}
}

// A bzip2 file holding something other than a tar is no tar archive:
// Sniff wants the block magic after "BZh" and the level, where a text
// starting "BZh" is plain.
func TestSniffBzip2(t *testing.T) {
	for _, tt := range []struct {
		head string
		want Format
	}{
		{"BZh91AY&SY", TarBzip2},
		{"BZh11AY&SYxx", TarBzip2},
		{"BZh01AY&SY", Tar},
		{"BZh9", Tar},
		{"BZhello, world", Tar},
		{"BZh9\x17rE8P\x90\x00\x00", Tar}, // a stream of nothing
	} {
		if got, _ := Sniff([]byte(tt.head)); got != tt.want {
			t.Errorf("Sniff(%q) = %q, want %q", tt.head, got, tt.want)
		}
	}
}
