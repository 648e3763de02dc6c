package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// gnuTarPath is GNU tar's path, or skips the test where there is none
// (tar is in every Debian image, CI's too).
func gnuTarPath(t *testing.T) string {
	t.Helper()
	tarPath, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar on PATH")
	}
	if out, err := exec.Command(tarPath, "--version").Output(); err != nil || !bytes.Contains(out, []byte("GNU tar")) {
		t.Skip("tar on PATH is not GNU tar")
	}
	return tarPath
}

// gnuTar runs GNU tar with args, failing the test if it fails.
func gnuTar(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(gnuTarPath(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("GNU tar %v: %v\n%s", args, err, out)
	}
}

// gnuUntar unpacks the archive at src into dir with GNU tar.
func gnuUntar(t *testing.T, src, dir string, args ...string) {
	t.Helper()
	gnuTar(t, append([]string{"-xf", src, "-C", dir}, args...)...)
}

// modes drops the permission bits from a snapshot: pallet writes its
// own (0755 or 0644), GNU tar the header's under the umask.
var modes = regexp.MustCompile(`^(file|dir) [0-7]+ ?`)

func shapes(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = modes.ReplaceAllString(v, "$1 ")
	}
	return out
}

// TestLaterEntryReplacesAsGNUTar: a tar holding a name twice (appended
// with tar -r, or written so) unpacks to the later entry, as GNU tar and
// bsdtar unpack it, whatever the earlier one was, but a directory: a
// symlink is replaced, not written through, and a directory replaces a
// file or a symlink.
func TestLaterEntryReplacesAsGNUTar(t *testing.T) {
	for _, tt := range []struct {
		name string
		ents []ent
		want map[string]string
	}{
		{"file then symlink", []ent{
			{name: "t", body: "target"},
			{name: "a", body: "one"},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
		}, map[string]string{"t": "file target", "a": "-> t"}},
		{"symlink then file", []ent{
			{name: "t", body: "target"},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
			{name: "a", body: "two"},
		}, map[string]string{"t": "file target", "a": "file two"}},
		{"symlink then symlink", []ent{
			{name: "t", body: "target"},
			{name: "u", body: "u"},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
			{name: "a", typ: tar.TypeSymlink, link: "u"},
		}, map[string]string{"t": "file target", "u": "file u", "a": "-> u"}},
		{"symlink then hard link", []ent{
			{name: "t", body: "target"},
			{name: "a", typ: tar.TypeSymlink, link: "missing"},
			{name: "a", typ: tar.TypeLink, link: "t"},
		}, map[string]string{"t": "file target", "a": "file target"}},
		{"symlink to a directory then a directory", []ent{
			{name: "d/x", body: "x"},
			{name: "a", typ: tar.TypeSymlink, link: "d"},
			{name: "a/", typ: tar.TypeDir},
			{name: "a/y", body: "y"},
		}, map[string]string{"d": "dir ", "d/x": "file x", "a": "dir ", "a/y": "file y"}},
		{"symlink to itself then a directory in the open one", []ent{
			{name: "a/b/f", body: "x"},
			{name: "a/b/l", typ: tar.TypeSymlink, link: "."},
			{name: "a/b/l/", typ: tar.TypeDir},
		}, map[string]string{"a": "dir ", "a/b": "dir ", "a/b/f": "file x", "a/b/l": "dir "}},
		{"empty directory then file", []ent{
			{name: "a/", typ: tar.TypeDir},
			{name: "a", body: "file"},
		}, map[string]string{"a": "file file"}},
		{"empty directory then symlink", []ent{
			{name: "t", body: "target"},
			{name: "a/", typ: tar.TypeDir},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
		}, map[string]string{"t": "file target", "a": "-> t"}},
		{"file then directory", []ent{
			{name: "a", body: "file"},
			{name: "a/", typ: tar.TypeDir},
			{name: "a/x", body: "x"},
		}, map[string]string{"a": "dir ", "a/x": "file x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, Tar, build(t, Tar, tt.ents))
			if err := Extract(context.Background(), s.src, Tar, s.out, Options{}); err != nil {
				t.Fatal(err)
			}
			s.checkContained(t)
			diffTrees(t, shapes(snapshot(t, s.out)), tt.want)

			ref := t.TempDir()
			gnuUntar(t, s.src, ref)
			diffTrees(t, shapes(snapshot(t, ref)), tt.want)
		})
	}
}

// seqText is what testdata/seq-7z-*.zip hold as seq/seq.txt: seq 1 2000.
func seqText() string {
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// TestZipMethodsOf7Zip: 7-Zip writes the methods -mm= names. bzip2 is
// unpacked, as unzip and bsdtar unpack it; the others are refused naming
// the method, where archive/zip says "unsupported compression algorithm".
// The zips were made with p7zip 16.02: seq 1 2000 > seq/seq.txt;
// 7z a -tzip -mm=BZip2 (Deflate64, LZMA) seq-7z-bzip2.zip seq.
func TestZipMethodsOf7Zip(t *testing.T) {
	for _, tt := range []struct {
		file, wantErr string
	}{
		{"seq-7z-bzip2.zip", ""},
		{"seq-7z-deflate64.zip", `entry "seq/seq.txt": compressed with Deflate64 (zip method 9), which pallet does not unpack`},
		{"seq-7z-lzma.zip", `entry "seq/seq.txt": compressed with LZMA (zip method 14), which pallet does not unpack`},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			s := newSandbox(t, Zip, data)
			err = Extract(context.Background(), s.src, Zip, s.out, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v\nwant it to contain %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diffTrees(t, snapshot(t, s.out), map[string]string{"seq": "dir 755", "seq/seq.txt": "file 644 " + seqText()})
		})
	}
}

// TestZipNamesInCodePage437: a zip written on Windows without the UTF-8
// flag holds its names in code page 437, as Python's zipfile and Windows
// read them (bsdtar and p7zip keep the bytes, unzip makes Latin-1 of them);
// Info-ZIP on Unix writes UTF-8 without the flag, and a Unix zip's other
// bytes are kept as they are.
func TestZipNamesInCodePage437(t *testing.T) {
	for _, tt := range []struct {
		what    string
		name    string // as the zip holds it
		creator uint16 // system << 8 | version
		flags   uint16
		want    string
		extra   []byte
	}{
		{"Windows, code page 437", "caf\x82-\x81.txt", 0<<8 | 20, 0, "café-ü.txt", nil},
		{"NTFS, code page 437", "\x9c\xe1", 11<<8 | 20, 0, "£ß", nil},
		{"Windows, UTF-8 flag", "café.txt", 0<<8 | 20, 0x800, "café.txt", nil},
		{"Windows, UTF-8 without the flag", "café.txt", 0<<8 | 20, 0, "café.txt", nil},
		{"Info-ZIP on Unix", "café.txt", 3<<8 | 30, 0, "café.txt", nil},
		{"Unix, Latin-1", "caf\xe9.txt", 3<<8 | 30, 0, "caf\xe9.txt", nil},
		// Info-ZIP on Windows and WinZip (neither here to run) add the
		// UTF-8 name in an extra field, for the name the header holds.
		{"Windows, code page 866 and its Unicode Path", "\xe4\xa0\xa9\xab.txt", 0<<8 | 20, 0, "файл.txt", unicodePathField("\xe4\xa0\xa9\xab.txt", "файл.txt")},
		{"Unix, Latin-1 and its Unicode Path", "caf\xe9.txt", 3<<8 | 30, 0, "café.txt", unicodePathField("caf\xe9.txt", "café.txt")},
		{"a Unicode Path for another name", "caf\x82.txt", 0<<8 | 20, 0, "café.txt", unicodePathField("renamed.txt", "renamed.txt")},
	} {
		t.Run(tt.what, func(t *testing.T) {
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			// CreateHeader keeps the creator's system, and sets the UTF-8
			// flag unless NonUTF8.
			fh := &zip.FileHeader{Name: tt.name, Method: zip.Store, CreatorVersion: tt.creator, Flags: tt.flags, NonUTF8: tt.flags&0x800 == 0, Extra: tt.extra}
			if _, err := zw.CreateHeader(fh); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			s := newSandbox(t, Zip, buf.Bytes())
			if err := Extract(context.Background(), s.src, Zip, s.out, Options{}); err != nil {
				t.Fatal(err)
			}
			diffTrees(t, snapshot(t, s.out), map[string]string{tt.want: "file 644 "})
		})
	}
}

// TestStripDoesNotCountDot: strip counts the components of a name
// without its "." ones, so an archive of "./x" entries (tar -C dir .)
// and one of "x" strip alike; GNU tar's --strip-components counts the
// ".". A link that then climbs out of what is left is refused saying
// so, not only that it leaves the root of an archive it stays inside.
func TestStripDoesNotCountDot(t *testing.T) {
	ents := []ent{
		{name: "./", typ: tar.TypeDir},
		{name: "./top/", typ: tar.TypeDir},
		{name: "./top/README", body: "r"},
		{name: "./top/bin/tool", body: "t"},
	}
	s := newSandbox(t, Tar, build(t, Tar, ents))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{Strip: 1}); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, shapes(snapshot(t, s.out)), map[string]string{"README": "file r", "bin": "dir ", "bin/tool": "file t"})
	ref := t.TempDir()
	gnuUntar(t, s.src, ref, "--strip-components=2")
	diffTrees(t, shapes(snapshot(t, ref)), map[string]string{"README": "file r", "bin": "dir ", "bin/tool": "file t"})

	ents = append(ents, ent{name: "./top/doc/README", typ: tar.TypeSymlink, link: "../README"})
	s = newSandbox(t, Tar, build(t, Tar, ents))
	err := Extract(context.Background(), s.src, Tar, s.out, Options{Strip: 2})
	want := `entry "./top/doc/README": symlink target "../README" leaves the archive root, placed at "README" once strip removes 2 leading component(s); "." is not a component strip removes, where GNU tar's --strip-components counts it`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v\nwant it to contain %s", err, want)
	}
}

// TestGNUIncrementalAndLabel: GNU tar's incremental archives (tar -g)
// give each directory a dumpdir entry ('D'), which GNU tar and bsdtar
// unpack as the directory, empty ones included, and tar -V puts a volume
// label first ('V'), which they pass over. Both are made here by GNU tar.
func TestGNUIncrementalAndLabel(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"top/bin", "top/empty"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "top/bin/tool"), []byte("t"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"top": "dir ", "top/bin": "dir ", "top/bin/tool": "file t", "top/empty": "dir "}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"incremental", []string{"-g", filepath.Join(t.TempDir(), "snapshot")}},
		{"label", []string{"-V", "release 1.0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			archive := filepath.Join(t.TempDir(), "a.tar")
			gnuTar(t, append(append([]string{"-cf", archive}, tt.args...), "-C", src, "top")...)
			out := t.TempDir()
			var skipped []string
			opt := Options{Skipped: func(name, what string) { skipped = append(skipped, name+" ("+what+")") }}
			if err := Extract(context.Background(), archive, Tar, out, opt); err != nil {
				t.Fatal(err)
			}
			if len(skipped) > 0 {
				t.Errorf("skipped %v", skipped)
			}
			diffTrees(t, shapes(snapshot(t, out)), want)
			ref := t.TempDir()
			gnuUntar(t, archive, ref)
			diffTrees(t, shapes(snapshot(t, ref)), want)
		})
	}
}

// TestGNUSparseFormats: GNU tar writes a sparse file (--sparse) in four
// forms: old GNU ('S' entries), and PAX records of versions 0.0, 0.1 and
// 1.0, the last two under a made-up name ("./GNUSparseFile.%p/...") that
// the records correct. Each is unpacked whole, under its own name, as
// GNU tar unpacks it.
func TestGNUSparseFormats(t *testing.T) {
	src := t.TempDir()
	const size = 3 << 20
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{0, 1 << 20, size - 3} {
		if _, err := f.WriteAt([]byte("abc"), at); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--format=gnu"},
		{"--format=posix", "--sparse-version=0.0"},
		{"--format=posix", "--sparse-version=0.1"},
		{"--format=posix", "--sparse-version=1.0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			archive := filepath.Join(t.TempDir(), "a.tar")
			gnuTar(t, append(append([]string{"--sparse", "-cf", archive}, args...), "-C", src, "sparse")...)
			if fi, err := os.Stat(archive); err != nil || fi.Size() >= size {
				t.Fatalf("tar wrote no sparse entry: %v, %v", fi, err)
			}
			for _, dir := range []string{"pallet", "gnu"} {
				out := filepath.Join(t.TempDir(), dir)
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
				if dir == "gnu" {
					gnuUntar(t, archive, out)
				} else if err := Extract(context.Background(), archive, Tar, out, Options{}); err != nil {
					t.Fatal(err)
				}
				names, err := os.ReadDir(out)
				if err != nil {
					t.Fatal(err)
				}
				if len(names) != 1 || names[0].Name() != "sparse" {
					t.Fatalf("%s unpacked %v, want [sparse]", dir, names)
				}
				got, err := os.ReadFile(filepath.Join(out, "sparse"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s unpacked %d bytes unlike the %d of the file tarred", dir, len(got), len(want))
				}
			}
		})
	}
}

// unicodePathField is an Info-ZIP Unicode Path extra field (0x7075)
// giving name, in UTF-8, to an entry whose header holds raw.
func unicodePathField(raw, name string) []byte {
	b := binary.LittleEndian.AppendUint16(nil, 0x7075)
	b = binary.LittleEndian.AppendUint16(b, uint16(5+len(name)))
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE([]byte(raw)))
	return append(b, name...)
}

// Stripped is told of each file and link strip removes whole (a LICENSE
// beside the top directory, which GNU tar drops too), by its path with
// "." left out; not of the directories strip removes.
func TestStrippedTold(t *testing.T) {
	ents := []ent{
		{name: "./", typ: tar.TypeDir},
		{name: "./LICENSE", body: "l"},
		{name: "NOTICE", typ: tar.TypeSymlink, link: "LICENSE"},
		{name: "./top/", typ: tar.TypeDir},
		{name: "./top/COPYING", body: "c"},
		{name: "./top/bin/tool", body: "t"},
	}
	for _, f := range []Format{Tar, Zip} {
		for strip, want := range map[int]string{0: "", 1: "LICENSE NOTICE", 2: "LICENSE NOTICE top/COPYING"} {
			ents := ents
			if f == Zip {
				ents = slices.DeleteFunc(slices.Clone(ents), func(e ent) bool { return e.typ == tar.TypeSymlink })
				want = strings.TrimSpace(strings.ReplaceAll(want, "NOTICE", ""))
				want = strings.Join(strings.Fields(want), " ")
			}
			s := newSandbox(t, f, build(t, f, ents))
			var got []string
			if err := Extract(context.Background(), s.src, f, s.out, Options{Strip: strip, Stripped: func(name string) { got = append(got, name) }}); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%v, strip %d: told %q, want %q", f, strip, got, want)
			}
		}
	}
}
