package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/ulikunitz/xz"
)

// hostileArchive is one archive a release site, or a local file, might
// hand pallet build.
type hostileArchive struct {
	name    string
	file    string // the name it is served and kept under, which gives its format
	data    []byte
	windows bool // placed into a Windows image
	keep    bool // extract: {links: keep}
	// line is where the error must be said: the artifact's (4), or the
	// placement's (11) where the archive is sound but a Windows image
	// cannot hold what it places.
	line int
	// want are what the error must say besides the recipe's line; none
	// means the build succeeds, and then check looks at the image.
	want  []string
	check func(t *testing.T, files map[string]string)
}

// TestHostileArchivesThroughBuild hands pallet build each hostile or
// damaged archive twice, from a loopback server under its sha256 pin and
// as a local file, and checks that the build fails at the artifact's
// line naming the entry (or succeeds, where GNU tar would too, with
// what it places), writes nothing outside its cache and output, leaves
// no output behind when it fails, and leaves the cache so that a good
// archive builds next with the digest a fresh cache gives.
func TestHostileArchivesThroughBuild(t *testing.T) {
	cases := hostileArchives(t)
	served := map[string][]byte{}
	for _, c := range cases {
		served["/"+c.file] = c.data
	}
	good := fixture.TarGz([]fixture.File{{Name: "bin/tool", Content: "good\n", Mode: 0o755}})
	served["/good.tar.gz"] = good
	srv := fixture.Serve(t, served)

	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	recipe := func(dir, source string, c hostileArchive) string {
		extract := "extract: {}"
		if c.keep {
			extract = "extract: {links: keep}"
		}
		base, platform := "scratch", "linux/amd64"
		if c.windows {
			base, platform = "windows-hostprocess-scratch", "windows/amd64"
		}
		file := filepath.Join(dir, "pallet.yaml")
		writeFile(t, file, fmt.Sprintf(`version: 1
artifacts:
  a:
    %s, %s}
    licenses: none
images:
  app:
    base: %s
    platforms: %s
    files:
      - {artifact: a, dest: /opt/}
`, source, extract, base, platform))
		return file
	}
	for _, c := range cases {
		for _, how := range []string{"url", "local"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(c.name)+"-"+how)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				source := fmt.Sprintf("url: {url: %s/%s, sha256: %s", srv.URL, c.file, fixture.SHA256(c.data))
				if how == "local" {
					writeFile(t, filepath.Join(dir, c.file), string(c.data))
					source = fmt.Sprintf("local: {path: %s", c.file)
				}
				out := filepath.Join(dir, "out")
				stderr, err := pallet(t, "build", "-q", "-f", recipe(dir, source, c), "--cache-dir", cache, "-o", "oci:"+out)
				if len(c.want) == 0 {
					if err != nil {
						t.Fatalf("build: %v\n%s", err, stderr)
					}
					platform := "linux/amd64"
					if c.windows {
						platform = "windows/amd64"
					}
					c.check(t, readImageFiles(t, out, platform))
				} else {
					checkRefused(t, err, fmt.Sprintf("pallet.yaml:%d:", max(c.line, 4)), c.want, out)
				}
				checkNothingEscaped(t, root)
			})
		}
	}

	// A refused archive's half-made tree is gone, not left for a sweep.
	if left, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(left) != 0 {
		t.Errorf("the cache's tmp/ holds %d entries after the builds, the first %s", len(left), left[0].Name())
	}
	// The cache every hostile build used still builds a good archive, to
	// the digest a cache of its own gives.
	goodCase := hostileArchive{file: "good.tar.gz"}
	digest := func(cache string) string {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		mustPallet(t, "build", "-q", "-f", recipe(dir, fmt.Sprintf("url: {url: %s/good.tar.gz, sha256: %s", srv.URL, fixture.SHA256(good)), goodCase), "--cache-dir", cache, "-o", "oci:"+out)
		if got := readImageFiles(t, out, "linux/amd64")["opt/bin/tool"]; got != "good\n (755)" {
			t.Errorf("opt/bin/tool is %q", got)
		}
		return layoutIndex(t, out).Manifests[0].Digest.String()
	}
	if used, fresh := digest(cache), digest(filepath.Join(t.TempDir(), "fresh")); used != fresh {
		t.Errorf("the good archive built to %s with the used cache, %s with a fresh one", used, fresh)
	}
}

// checkRefused fails the test unless err refuses the build at the
// position at, saying each of want, with no output left at out.
func checkRefused(t *testing.T, err error, at string, want []string, out string) {
	t.Helper()
	if err == nil {
		t.Fatalf("built, want it refused saying %q", want)
	}
	if !strings.Contains(err.Error(), at) {
		t.Errorf("error not at %s: %v", at, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed build left its output %s (%v)", out, err)
	}
}

// checkNothingEscaped fails the test if a file an archive names pwned193
// is anywhere below the given directories, or at /tmp/pwned193.
func checkNothingEscaped(t *testing.T, dirs ...string) {
	t.Helper()
	if _, err := os.Lstat("/tmp/pwned193"); err == nil {
		t.Error("/tmp/pwned193 was written")
	}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return fs.SkipDir
			}
			if strings.Contains(e.Name(), "pwned193") {
				t.Errorf("%s was written", p)
			}
			return nil
		})
	}
}

func hostileArchives(t *testing.T) []hostileArchive {
	reg := func(name, body string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), Linkname: body}
	}
	dir := func(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
	sym := func(name, target string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Mode: 0o777, Linkname: target}
	}
	hard := func(name, target string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeLink, Mode: 0o644, Linkname: target}
	}
	long := strings.Repeat("n/", 1<<19-8) + "pwned193"
	plain := tarOf(t, reg("a", strings.Repeat("a", 700)), reg("b", "b"))
	good := gzipOf(t, tarOf(t, reg("a", "a")))
	badCRC := gzipOf(t, make([]byte, 4096))
	badCRC[len(badCRC)-6] ^= 1

	return []hostileArchive{
		{name: "symlink then a file at its path", file: "t1.tar.gz",
			data: gzipOf(t, tarOf(t, reg("sub/f", "orig"), sym("l", "sub/f"), reg("l", "new"))),
			check: func(t *testing.T, files map[string]string) {
				if files["opt/l"] != "new (644)" || files["opt/sub/f"] != "orig (644)" {
					t.Errorf("l is %q and sub/f %q, want the file replacing the link and the link's target untouched", files["opt/l"], files["opt/sub/f"])
				}
			}},
		{name: "write through a link in the tree", file: "t2.tgz",
			data: gzipOf(t, tarOf(t, dir("sub/"), sym("l", "sub"), reg("l/pwned193", "x"))),
			want: []string{`"l/pwned193"`}},
		{name: "hard link to a rooted link, written through", file: "t3.tar", keep: true,
			data: tarOf(t, sym("s", "/tmp"), hard("h", "s"), reg("h/pwned193", "x")),
			want: []string{`"h/pwned193"`}},
		{name: "directory replaced by a link, then entries under it", file: "t4.tar.xz",
			data: xzOf(t, tarOf(t, dir("d/"), reg("d/f", "x"), dir("e/"), sym("d", "e"), reg("d/pwned193", "x"))),
			want: []string{`entry "d": would replace a directory`}},
		{name: "relative links climbing out together", file: "t5.tar.zst",
			data: zstdOf(t, tarOf(t, sym("a/l1", ".."), sym("pwned193", "a/l1/../.."))),
			want: []string{`"pwned193"`, "may leave the archive root"}},
		{name: "pax size past the stream", file: "t6.tar.bz2",
			data: fixture.Bzip2(t, paxSized(t, "big", "100000", "hello")),
			want: []string{`entry "big"`, "unexpected EOF"}},
		{name: "gnu long name of 1 MiB", file: "t7.tgz",
			data: gzipOf(t, tarOf(t, &tar.Header{Name: long, Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatGNU})),
			want: []string{`entry "n/n/n/`, "4096 bytes"}},
		{name: "gzip trailing garbage", file: "t8.tar.gz",
			data: append(append([]byte{}, good...), "garbage after the member"...),
			check: func(t *testing.T, files map[string]string) {
				if files["opt/a"] != "a (644)" {
					t.Errorf("opt/a is %q", files["opt/a"])
				}
			}},
		{name: "gzip second member damaged", file: "t9.tar.gz",
			data: append(append([]byte{}, good...), badCRC...),
			want: []string{"after end of tar", "gzip: invalid checksum"}},
		{name: "zstd window of 2 GiB", file: "t10.tar.zst",
			// A frame header asking for a 2 GiB window, then a raw block.
			data: []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 21 << 3, 0x01, 0x00, 0x00},
			want: []string{"window larger than the limit"}},
		{name: "tar cut inside an entry's padding", file: "t11.tar",
			data: plain[:1300],
			want: []string{`entry "a"`, "cut short"}},
		{name: "empty zstd", file: "t12.tar.zst", data: []byte{},
			want: []string{"zstd: empty stream"}},
		{name: "devices, pipes, setuid, negative mtime, huge ids", file: "t13.tar",
			data: tarOf(t,
				&tar.Header{Name: "s", Typeflag: tar.TypeReg, Mode: 0o6755, ModTime: time.Unix(-1e12, 0), Uid: 1 << 40, Gid: 1<<31 - 1, Format: tar.FormatPAX},
				&tar.Header{Name: "dev", Typeflag: tar.TypeBlock, Devmajor: 8, Mode: 0o666},
				&tar.Header{Name: "fifo", Typeflag: tar.TypeFifo, Mode: 0o666}),
			check: func(t *testing.T, files map[string]string) {
				if files["opt/s"] != " (755)" {
					t.Errorf("opt/s is %q, want it 755 with no setuid", files["opt/s"])
				}
				if _, ok := files["opt/dev"]; ok {
					t.Error("the block device was placed")
				}
				if _, ok := files["opt/fifo"]; ok {
					t.Error("the named pipe was placed")
				}
			}},
		{name: "zip overlapping entries", file: "t14.zip", data: zipOverlapping(t),
			want: []string{"overlap"}},
		{name: "zip local header method disagrees", file: "t15.zip", data: zipMethodLies(t),
			want: []string{`"x"`, "method"}},
		{name: "zip64 with a bogus size", file: "t16.zip", data: zipBogusSize(t),
			want: []string{`"x"`}},
		{name: "windows names differing in case", file: "w1.zip", windows: true, line: 11,
			data: fixture.Zip([]fixture.File{{Name: "Bin/tool.txt", Content: "a"}, {Name: "bin/tool.txt", Content: "b"}}),
			want: []string{"tool.txt"}},
		{name: "windows stream name", file: "w2.tar", windows: true, line: 11,
			data: tarOf(t, reg("f.txt:stream", "x")), want: []string{"f.txt:stream"}},
		{name: "windows reserved name", file: "w3.tar", windows: true, line: 11,
			data: tarOf(t, reg("d/NUL.txt", "x")), want: []string{"NUL.txt"}},
		{name: "windows trailing dot", file: "w4.tar", windows: true, line: 11,
			data: tarOf(t, reg("f.", "x"), reg("f", "y")), want: []string{`f.`}},
		{name: "windows trailing space", file: "w5.tgz", windows: true, line: 11,
			data: gzipOf(t, tarOf(t, reg("g ", "x"))), want: []string{`g `}},
		{name: "windows backslash name", file: "w6.tar", windows: true, line: 11,
			data: tarOf(t, reg(`d\f.txt`, "x"), reg("d/f.txt", "y")), want: []string{`f.txt`}},
	}
}

func tarOf(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hs {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body, h.Linkname = h.Linkname, ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paxSized is a tar of one entry whose PAX header says it is size bytes,
// where body is what follows.
func paxSized(t *testing.T, name, size, body string) []byte {
	t.Helper()
	rec := " size=" + size + "\n"
	rec = fmt.Sprint(len(rec)+2) + rec
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "PaxHeader", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(rec)), Format: tar.FormatUSTAR})
	tw.Write([]byte(rec))
	tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	tw.Write([]byte(body))
	tw.Close()
	data := b.Bytes()
	// Make the first entry a PAX header: its type, then its checksum.
	blk := data[:512]
	blk[156] = tar.TypeXHeader
	copy(blk[148:156], "        ")
	sum := 0
	for _, c := range blk {
		sum += int(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return data
}

func gzipOf(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func xzOf(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	w, err := xz.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func zstdOf(t *testing.T, data []byte) []byte {
	w, _ := zstd.NewWriter(nil)
	defer w.Close()
	return w.EncodeAll(data, nil)
}

// zipRecords writes a zip of the named stored entries and returns it
// with the offsets of its central directory records.
func zipRecords(t *testing.T, method uint16, entries ...string) ([]byte, []int) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("same content"))
	}
	zw.Close()
	data := b.Bytes()
	var central []int
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte("PK\x01\x02"))
		if j < 0 {
			break
		}
		central = append(central, i+j)
		i += j + 4
	}
	return data, central
}

// zipOverlapping has two central records whose local header is one:
// the second record's offset is the first's.
func zipOverlapping(t *testing.T) []byte {
	data, central := zipRecords(t, zip.Store, "pwned193a", "pwned193b")
	copy(data[central[1]+42:], data[central[0]+42:central[0]+46])
	// The second local header and its data are now claimed by no record.
	return data
}

// zipMethodLies says deflate in its central directory and stored in the
// local header.
func zipMethodLies(t *testing.T) []byte {
	data, _ := zipRecords(t, zip.Store, "x")
	binary.LittleEndian.PutUint16(data[8:], zip.Deflate)
	return data
}

// zipBogusSize declares, in a zip64 extra field, an entry of 2^62 bytes
// whose data is a few.
func zipBogusSize(t *testing.T) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "x", Method: zip.Store, CompressedSize64: 4, UncompressedSize64: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("tiny"))
	zw.Close()
	return b.Bytes()
}

// TestHostileArchivesThroughDockerfileAdd hands the same archives to a
// Dockerfile's ADD, from the build context, which unpacks a tar it finds
// there (keeping absolute links as links of the image's root, as
// BuildKit does): each is refused at the ADD's line naming the entry,
// and nothing lands outside the cache and output.
func TestHostileArchivesThroughDockerfileAdd(t *testing.T) {
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	n := 0
	for _, c := range hostileArchives(t) {
		if c.windows || len(c.want) == 0 || strings.HasSuffix(c.file, ".zip") || len(c.data) == 0 {
			// ADD copies a zip, or an empty file, as the file it is.
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprint(n))
			writeFile(t, filepath.Join(dir, c.file), string(c.data))
			writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD "+c.file+" /x/\n")
			out := filepath.Join(dir, "out")
			_, err := pallet(t, "build", "-q", "--cache-dir", cache, "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
			checkRefused(t, err, "Dockerfile:2:", c.want, out) // the ADD's line
			checkNothingEscaped(t, root)
		})
	}
}

// TestURLNamedDotDot: a url whose last path element decodes to ".."
// (/a/%2e%2e) names no file; the build says to set filename, where it
// said only that ".." leaves the tree.
func TestURLNamedDotDot(t *testing.T) {
	data := []byte("payload")
	srv := fixture.Serve(t, map[string][]byte{"/a/..": data})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  a:
    url: {url: %s/a/%%2e%%2e, sha256: %s}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, dest: /opt/}
`, srv.URL, fixture.SHA256(data)))
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml:4:") || !strings.Contains(err.Error(), "cannot name the file from the URL; set filename") {
		t.Errorf("got %v, want it refused at pallet.yaml:4 saying to set filename", err)
	}
}
