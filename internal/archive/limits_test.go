package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated runs f and returns the bytes allocated meanwhile. TotalAlloc
// counts every allocation, even one never touched, so a decoder that
// reserves a 4 GiB dictionary shows here although it may not show in RSS.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type limitCase struct {
	name   string
	format Format
	data   func(t testing.TB) []byte
	opt    Options
	// wantErr is the whole error after "extract <archive>: ", so that
	// what it names (entry, limit, claim) is checked exactly.
	wantErr string
	// claim is what the archive tries to make Extract spend, in bytes of
	// memory or output; the test requires allocations far below it.
	claim int64
}

const (
	mib = 1 << 20
	gib = 1 << 30

	// floodRecords is the count of records zipFlood cases hold: 24 MiB of
	// them, which passes archive/zip's check of the count modulo 65536
	// when 5 are declared.
	floodRecords = 8<<16 + 5
)

// keep is a small file the Include tests select while the bomb is skipped.
var keep = []ent{{name: "keep", body: "k"}}

func limitCases() []limitCase {
	var cases []limitCase
	for _, f := range []Format{Tar, TarGzip, TarXz, TarZstd, TarBzip2} {
		// A plain tar has no compression: it really is as big as it
		// claims, so it claims less.
		limit, n := int64(mib), int64(64*mib)
		if f == Tar {
			limit, n = 64<<10, 256<<10
		}
		opt := Options{MaxBytes: limit}
		bomb := fmt.Sprintf(`entry "zeros": archive expands beyond the limit of %d bytes`, limit)
		bombKeep := bomb
		if f == TarXz {
			// Its index says so before anything is decoded: the zeros,
			// their tar header (and keep's header and content).
			bomb = fmt.Sprintf(`archive expands beyond the limit of %d bytes: its xz index declares %d`, limit, 512+n+mib)
			bombKeep = fmt.Sprintf(`archive expands beyond the limit of %d bytes: its xz index declares %d`, limit, 3*512+n+mib)
		}
		cases = append(cases,
			limitCase{
				name: "extracted bomb", format: f, opt: opt, claim: n, wantErr: bomb,
				data: func(t testing.TB) []byte {
					return zerosArchive(t, f, tarPrefix(t, nil, "zeros", n), n+mib)
				},
			},
			limitCase{
				name: "bomb skipped by include", format: f, claim: n, wantErr: bombKeep,
				opt: Options{MaxBytes: limit, Include: []string{"keep"}},
				data: func(t testing.TB) []byte {
					return zerosArchive(t, f, tarPrefix(t, keep, "zeros", n), n+mib)
				},
			},
			limitCase{
				name: "bomb skipped by strip", format: f, claim: n, wantErr: bomb,
				opt: Options{MaxBytes: limit, Strip: 1},
				data: func(t testing.TB) []byte {
					return zerosArchive(t, f, tarPrefix(t, nil, "zeros", n), n+mib)
				},
			},
			limitCase{
				name: "entry count", format: f, opt: Options{MaxEntries: 20},
				data:    func(t testing.TB) []byte { return build(t, f, manyEntries(30)) },
				wantErr: `entry "f20": archive has more than 20 entries`,
			},
		)
	}
	return append(cases,
		limitCase{
			name: "skipped entries add up", format: TarGzip, claim: 512 << 10,
			opt: Options{MaxBytes: 256 << 10, Include: []string{"keep"}},
			data: func(t testing.TB) []byte {
				ents := slicesConcat(keep, fillers("skip", 8, 64<<10))
				return compress(t, TarGzip, tarBytes(t, ents))
			},
			// Three fillers and their headers fit; what is left is less
			// than the fourth declares.
			wantErr: `entry "skip3": archive expands beyond the limit of 262144 bytes`,
		},
		limitCase{
			name: "tar headers count", format: TarZstd, claim: 1 * mib,
			opt: Options{MaxBytes: 256 << 10},
			data: func(t testing.TB) []byte {
				// Long PAX records make each header big; tar.Reader
				// accepts up to 1 MiB of them per entry.
				var buf bytes.Buffer
				tw := tar.NewWriter(&buf)
				for i := range 6 {
					tw.WriteHeader(&tar.Header{
						Name: fmt.Sprintf("p%d", i), Typeflag: tar.TypeReg, Mode: 0o644,
						PAXRecords: map[string]string{"comment": strings.Repeat("x", 150<<10)},
					})
				}
				tw.Close()
				return compress(t, TarZstd, buf.Bytes())
			},
			wantErr: `read tar after entry "p0": archive expands beyond the limit of 262144 bytes`,
		},
		limitCase{
			name: "hard links count once per name", format: Tar, claim: 6 * 300 << 10,
			opt: Options{MaxBytes: mib},
			data: func(t testing.TB) []byte {
				ents := []ent{{name: "big", body: strings.Repeat("b", 300<<10)}}
				for i := range 5 {
					ents = append(ents, ent{name: fmt.Sprintf("h%d", i), typ: tar.TypeLink, link: "big"})
				}
				return tarBytes(t, ents)
			},
			wantErr: `entry "h2": archive expands beyond the limit of 1048576 bytes`,
		},
		limitCase{
			name: "zip bomb", format: Zip, claim: 64 * mib, opt: Options{MaxBytes: mib},
			data:    func(t testing.TB) []byte { return zipBomb(t, 64*mib) },
			wantErr: `entry "zeros": archive expands beyond the limit of 1048576 bytes`,
		},
		limitCase{
			name: "zip lying about its size", format: Zip, claim: 64 * mib,
			data:    func(t testing.TB) []byte { return lyingZip(t, 64*mib) },
			wantErr: `entry "liar": content does not match declared size 10: zip: not a valid zip file`,
		},
		limitCase{
			name: "zip entry count", format: Zip, opt: Options{MaxEntries: 100},
			data:    func(t testing.TB) []byte { return zipStoredMany(t, 101) },
			wantErr: `archive has more than 100 entries`,
		},
		limitCase{
			name: "zip64 entry count", format: Zip, opt: Options{MaxEntries: 69999},
			data:    func(t testing.TB) []byte { return zipStoredMany(t, 70000) },
			wantErr: `archive has more than 69999 entries`,
		},
		// A directory of many records that declares few of them: the
		// records must not all be read before the count is known.
		limitCase{
			name: "zip directory holding more records than it declares", format: Zip,
			opt: Options{MaxEntries: 10}, claim: floodRecords * 200,
			data:    func(t testing.TB) []byte { return zipFlood(floodRecords, 5, floodRecords*46, false) },
			wantErr: `archive has more than 10 entries`,
		},
		limitCase{
			name: "zip directory declaring a size of a few records", format: Zip,
			opt: Options{MaxEntries: 10}, claim: floodRecords * 200,
			data:    func(t testing.TB) []byte { return zipFlood(floodRecords, 5, 5*46, false) },
			wantErr: `archive has more than 10 entries`,
		},
		limitCase{
			name: "zip64 directory holding more records than it declares", format: Zip,
			opt: Options{MaxEntries: 10}, claim: floodRecords * 200,
			data:    func(t testing.TB) []byte { return zipFlood(floodRecords, 5, floodRecords*46, true) },
			wantErr: `archive has more than 10 entries`,
		},
		limitCase{
			name: "zip64 directory declaring a size of a few records", format: Zip,
			opt: Options{MaxEntries: 10}, claim: floodRecords * 200,
			data:    func(t testing.TB) []byte { return zipFlood(floodRecords, 5, 5*46, true) },
			wantErr: `archive has more than 10 entries`,
		},
		limitCase{
			// archive/zip accepts it holding 3,000,000%65536 records, fewer
			// than the limit: only the declared count exceeds it.
			name: "zip64 declaring 3,000,000 entries", format: Zip,
			data:    func(t testing.TB) []byte { return zipFlood(3_000_000%65536, 3_000_000, 3_000_000%65536*46, true) },
			wantErr: `archive has more than 1000000 entries`,
		},

		// Decoder windows. xz and zstd headers say how much history to
		// keep, and decoders allocate it before decoding anything.
		limitCase{
			name: "xz dictionary of 4 GiB", format: TarXz, claim: 4 * gib,
			data: func(t testing.TB) []byte {
				return xzZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 128<<10, 40)
			},
			wantErr: `read tar: xz block 1 needs a 4294967295-byte dictionary, more than the limit of 268435456 bytes`,
		},
		limitCase{
			name: "xz dictionary claimed by a later block", format: TarXz, claim: 4 * gib,
			data: func(t testing.TB) []byte {
				first := concat(lzma2Stored(tarPrefix(t, nil, "big", 1*mib)), lzma2Zeros(t, 64<<10), []byte{0})
				second := concat(lzma2Zeros(t, 2*mib), []byte{0})
				return xzFile(
					xzBlock1{dict: 0, lzma2: first, size: 512 + 64<<10},
					xzBlock1{dict: 40, lzma2: second, size: 2 * mib},
				)
			},
			wantErr: `entry "big": xz block 2 needs a 4294967295-byte dictionary, more than the limit of 268435456 bytes`,
		},
		limitCase{
			name: "xz dictionary over MaxWindow", format: TarXz, claim: 2 * mib,
			opt: Options{MaxWindow: mib},
			data: func(t testing.TB) []byte {
				// Code 18 is 2 MiB.
				return xzZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 128<<10, 18)
			},
			wantErr: `read tar: xz block 1 needs a 2097152-byte dictionary, more than the limit of 1048576 bytes`,
		},
		limitCase{
			name: "zstd window of 512 MiB", format: TarZstd, claim: 512 * mib,
			data: func(t testing.TB) []byte {
				return zstdZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 256<<10, 19<<3, 0)
			},
			wantErr: `read tar: zstd frame needs a window larger than the limit of 268435456 bytes`,
		},
		limitCase{
			name: "zstd single segment of 400 MiB", format: TarZstd, claim: 400 * mib,
			data: func(t testing.TB) []byte {
				return zstdZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 256<<10, 0, 400*mib)
			},
			wantErr: `read tar: zstd frame needs a window larger than the limit of 268435456 bytes`,
		},
		limitCase{
			name: "zstd window over MaxWindow", format: TarZstd, claim: 128 << 10,
			opt: Options{MaxWindow: 64 << 10},
			data: func(t testing.TB) []byte {
				return zstdZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 256<<10, zstdWindow128K, 0)
			},
			wantErr: `read tar: zstd frame needs a window larger than the limit of 65536 bytes`,
		},
	)
}

func slicesConcat(a, b []ent) []ent { return append(append([]ent(nil), a...), b...) }

func fillers(prefix string, n, size int) []ent {
	ents := make([]ent, n)
	for i := range ents {
		ents[i] = ent{name: fmt.Sprintf("%s%d", prefix, i), body: strings.Repeat("f", size)}
	}
	return ents
}

// TestLimits extracts archives that try to exhaust disk, memory or time.
// Each must fail with an error that names the archive, the entry where
// there is one, and the limit, that matches ErrLimit, and that comes
// before the archive's claim was allocated or written.
func TestLimits(t *testing.T) {
	for _, tc := range limitCases() {
		t.Run(string(tc.format)+"/"+tc.name, func(t *testing.T) {
			s := newSandbox(t, tc.format, tc.data(t))
			var err error
			alloc := allocated(func() {
				err = Extract(context.Background(), s.src, tc.format, s.out, tc.opt)
			})
			want := "extract " + s.src + ": " + tc.wantErr
			if err == nil || err.Error() != want {
				t.Errorf("error = %v\nwant    %s", err, want)
			}
			if !strings.Contains(tc.wantErr, "declared size") && !errors.Is(err, ErrLimit) {
				t.Errorf("error does not match ErrLimit")
			}
			// Buffers and the decoders' own state take a few MiB (an
			// 8 MiB window for the xz and zstd writers' defaults); the
			// large claims are 64 MiB to 4 GiB.
			if limit := uint64(max(tc.claim/4, 16*mib)); alloc > limit {
				t.Errorf("allocated %d bytes during Extract, want at most %d (claim %d)", alloc, limit, tc.claim)
			}
			if written := treeSize(t, s.out); written > max(tc.opt.MaxBytes, mib) {
				t.Errorf("%d bytes written despite the limit", written)
			}
			s.checkContained(t)
		})
	}
}

// TestZipOverlapsRefused extracts zips whose entries share compressed
// data, as zip bombs' do: they must be refused before anything is
// inflated, not once MaxBytes is written.
func TestZipOverlapsRefused(t *testing.T) {
	tests := []struct {
		name    string
		data    func(t testing.TB) []byte
		wantErr string
	}{
		{name: "entries sharing one local file",
			// 32 GiB from 32 MiB of zip: without the check the first 16
			// entries fill the default MaxBytes.
			data:    func(t testing.TB) []byte { return overlapZip(t, 32, gib) },
			wantErr: `entries "zeros0" and "zeros1" share compressed data, as a zip bomb's do: pallet refuses a zip whose entries overlap`},
		{name: "entry whose data holds another", data: quotedZip,
			wantErr: `entries "outer" and "inner" share compressed data, as a zip bomb's do: pallet refuses a zip whose entries overlap`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, Zip, tt.data(t))
			start := time.Now()
			err := Extract(context.Background(), s.src, Zip, s.out, Options{})
			if want := "extract " + s.src + ": " + tt.wantErr; err == nil || err.Error() != want {
				t.Errorf("error = %v\nwant    %s", err, want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %v", d)
			}
			if files, err := os.ReadDir(s.out); err != nil || len(files) > 0 {
				t.Errorf("extracted %d files (%v)", len(files), err)
			}
		})
	}
}

func treeSize(t testing.TB, dir string) int64 {
	t.Helper()
	var size int64
	for _, v := range snapshotInfo(t, dir) {
		size += v
	}
	return size
}

// snapshotInfo maps every regular file under dir to its size.
func snapshotInfo(t testing.TB, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name := range snapshot(t, dir) {
		if fi, err := root.Lstat(name); err == nil && fi.Mode().IsRegular() {
			out[name] = fi.Size()
		}
	}
	return out
}

// TestLimitsLeaveRoomForRealArchives extracts archives right at each
// limit: the checks must refuse only what goes beyond.
func TestLimitsLeaveRoomForRealArchives(t *testing.T) {
	bigTar := func(t testing.TB) []byte {
		return tarBytes(t, []ent{{name: "big", body: strings.Repeat("b", 300<<10)}, {name: "h", typ: tar.TypeLink, link: "big"}})
	}
	tests := []struct {
		name   string
		format Format
		data   func(t testing.TB) []byte
		opt    Options
		want   map[string]int64
	}{
		{name: "xz dictionary equal to MaxWindow", format: TarXz, opt: Options{MaxWindow: 2 * mib},
			data: func(t testing.TB) []byte { return xzZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 128<<10, 18) },
			want: map[string]int64{"zeros": 64 << 10}},
		{name: "zstd window equal to MaxWindow", format: TarZstd, opt: Options{MaxWindow: 128 << 10},
			data: func(t testing.TB) []byte {
				return zstdZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 256<<10, zstdWindow128K, 0)
			},
			want: map[string]int64{"zeros": 64 << 10}},
		{name: "zstd single segment", format: TarZstd,
			data: func(t testing.TB) []byte {
				return zstdZeros(t, tarPrefix(t, nil, "zeros", 64<<10), 256<<10, 0, 512+256<<10)
			},
			want: map[string]int64{"zeros": 64 << 10}},
		{name: "hard link within MaxBytes", format: Tar, opt: Options{MaxBytes: 600 << 10}, data: bigTar,
			want: map[string]int64{"big": 300 << 10, "h": 300 << 10}},
		{name: "bomb in a zip entry that is skipped", format: Zip, opt: Options{MaxBytes: mib, Include: []string{"keep"}},
			data: func(t testing.TB) []byte {
				// Skipped zip entries are never inflated, so cost nothing.
				return zipRaw(t,
					rawEntry{"keep", deflateZeros(t, nil, mib), crcZeros(nil, mib), mib},
					rawEntry{"zeros", deflateZeros(t, nil, 64*mib), crcZeros(nil, 64*mib), 64 * mib})
			},
			want: map[string]int64{"keep": mib}},
		{name: "largest MaxBytes", format: TarGzip, opt: Options{MaxBytes: math.MaxInt64},
			data: func(t testing.TB) []byte { return build(t, TarGzip, manyEntries(2)) },
			want: map[string]int64{"f0": 1, "f1": 1}},
		{name: "largest MaxBytes, zip", format: Zip, opt: Options{MaxBytes: math.MaxInt64},
			data: func(t testing.TB) []byte { return build(t, Zip, manyEntries(2)) },
			want: map[string]int64{"f0": 1, "f1": 1}},
		{name: "entries equal to MaxEntries", format: TarGzip, opt: Options{MaxEntries: 3},
			data: func(t testing.TB) []byte { return build(t, TarGzip, manyEntries(3)) },
			want: map[string]int64{"f0": 1, "f1": 1, "f2": 1}},
		{name: "zip entries equal to MaxEntries", format: Zip, opt: Options{MaxEntries: 3},
			data: func(t testing.TB) []byte { return zipStoredMany(t, 3) },
			want: map[string]int64{"f0": 1, "f1": 1, "f2": 1}},
		{name: "zip64 entries equal to MaxEntries", format: Zip,
			opt:  Options{MaxEntries: 70000, Include: []string{"f69999"}},
			data: func(t testing.TB) []byte { return zipStoredMany(t, 70000) },
			want: map[string]int64{"f69999": 1}},
		{name: "zip with the longest comment", format: Zip, opt: Options{MaxEntries: 2},
			data: func(t testing.TB) []byte {
				var buf bytes.Buffer
				zw := zip.NewWriter(&buf)
				for _, name := range []string{"f0", "f1"} {
					w, err := zw.Create(name)
					if err != nil {
						t.Fatal(err)
					}
					w.Write([]byte("x"))
				}
				zw.SetComment(strings.Repeat("c", 0xffff))
				if err := zw.Close(); err != nil {
					t.Fatal(err)
				}
				return buf.Bytes()
			},
			want: map[string]int64{"f0": 1, "f1": 1}},
		{name: "zip after a prefix", format: Zip, opt: Options{MaxEntries: 2},
			data: func(t testing.TB) []byte {
				// As a self-extracting archive is: its offsets do not count
				// the prefix, and archive/zip finds the directory by its end.
				return concat([]byte(strings.Repeat("#!/bin/sh\n", 1000)), zipStoredMany(t, 2))
			},
			want: map[string]int64{"f0": 1, "f1": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, tt.format, tt.data(t))
			if err := Extract(context.Background(), s.src, tt.format, s.out, tt.opt); err != nil {
				t.Fatal(err)
			}
			got := snapshotInfo(t, s.out)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("extracted %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNegativeLimitsRefused(t *testing.T) {
	s := newSandbox(t, Tar, build(t, Tar, keep))
	for _, opt := range []Options{{MaxBytes: -1}, {MaxEntries: -1}, {MaxWindow: -1}} {
		err := Extract(context.Background(), s.src, Tar, s.out, opt)
		if err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%+v: error = %v", opt, err)
		}
	}
}

// FuzzZipDirectory checks checkZipDirectory's reading of a zip against
// archive/zip's: every zip archive/zip opens must be found, and its
// records counted, never fewer than archive/zip reads. A change in
// archive/zip's reading (it is followed step by step) shows here.
func FuzzZipDirectory(f *testing.F) {
	f.Add(zipStoredMany(f, 3))
	f.Add(build(f, Zip, sampleTree))
	f.Add(concat([]byte("#!/bin/sh\n"), zipStoredMany(f, 2)))
	f.Add(zipFlood(7, 5, 5*46, false))
	f.Add(zipFlood(7, 5, 7*46, true))
	f.Add(zipFlood(7, 5, 5*46, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, size := bytes.NewReader(data), int64(len(data))
		zr, err := zip.NewReader(r, size)
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return
		}
		_, starts, err := zipDirectory(r, size)
		if err != nil {
			t.Fatalf("archive/zip reads %d records, zipDirectory fails: %v", len(zr.File), err)
		}
		n := 0
		for _, start := range starts {
			c, err := countZipRecords(r, start, size, len(data))
			if err != nil {
				t.Fatal(err)
			}
			n = max(n, c)
		}
		if n < len(zr.File) {
			t.Fatalf("archive/zip reads %d records, countZipRecords %d from %v", len(zr.File), n, starts)
		}
	})
}
