package archive

import (
	"archive/tar"
	"archive/zip"
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
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// ent describes one archive member for the test builders. typ uses tar
// type flags for both formats; zero means a regular file.
type ent struct {
	name string
	typ  byte
	mode int64
	body string
	link string
	// dos writes a zip entry as MS-DOS or Windows do (creator system
	// FAT, DOS attributes), where '\' separates directories.
	dos bool
}

func tarBytes(t testing.TB, ents []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
			if typ == tar.TypeDir {
				mode = 0o755
			}
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: mode, Linkname: e.link}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if typ == tar.TypeXGlobalHeader {
			hdr = &tar.Header{Name: e.name, Typeflag: typ, PAXRecords: map[string]string{"comment": "global"}}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipBytes(t testing.TB, ents []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		fh := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		body := e.body
		switch e.typ {
		case tar.TypeDir:
			fh.SetMode(fs.ModeDir | 0o755)
		case tar.TypeSymlink:
			fh.SetMode(fs.ModeSymlink | 0o777)
			body = e.link
		default:
			mode := e.mode
			if mode == 0 {
				mode = 0o644
			}
			fh.SetMode(fs.FileMode(mode))
		}
		if e.dos {
			fh.CreatorVersion, fh.ExternalAttrs = 0, 0
			if e.typ == tar.TypeDir {
				fh.ExternalAttrs = 0x10 // FILE_ATTRIBUTE_DIRECTORY
			}
		}
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func compress(t testing.TB, f Format, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch f {
	case Tar:
		return data
	case TarGzip:
		w = gzip.NewWriter(&buf)
	case TarXz:
		w, err = xz.NewWriter(&buf)
	case TarZstd:
		w, err = zstd.NewWriter(&buf)
	case TarBzip2:
		return bzip2Bytes(t, data)
	default:
		t.Fatalf("compress: unexpected format %q", f)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// build returns the archive bytes for ents in format f.
func build(t testing.TB, f Format, ents []ent) []byte {
	t.Helper()
	if f == Zip {
		return zipBytes(t, ents)
	}
	return compress(t, f, tarBytes(t, ents))
}

var exts = map[Format]string{
	Tar: "tar", TarGzip: "tgz", TarXz: "tar.xz", TarZstd: "tzst", TarBzip2: "tar.bz2", Zip: "zip",
}

// sandbox is a scratch layout: the archive and two sibling directories,
// out (the extraction target) and canary (which must stay empty).
type sandbox struct {
	parent, src, out, canary string
}

func newSandbox(t testing.TB, f Format, data []byte) sandbox {
	t.Helper()
	parent := t.TempDir()
	s := sandbox{
		parent: parent,
		src:    filepath.Join(parent, "archive."+exts[f]),
		out:    filepath.Join(parent, "out"),
		canary: filepath.Join(parent, "canary"),
	}
	for _, d := range []string{s.out, s.canary} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(s.src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkContained fails if anything appeared next to out or in the canary,
// or if a symlink inside out resolves outside it (but one whose target
// is absolute, with rooted: Options.RootedLinks keeps those as links of
// the image's root, and never follows them).
func (s sandbox) checkContained(t testing.TB, rooted ...bool) {
	t.Helper()
	names, err := os.ReadDir(s.parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		switch n.Name() {
		case "out", "canary", filepath.Base(s.src):
		default:
			t.Errorf("unexpected %q created next to the extraction dir", n.Name())
		}
	}
	if c, _ := os.ReadDir(s.canary); len(c) > 0 {
		t.Errorf("canary dir is not empty: %v", c)
	}
	realOut, err := filepath.EvalSymlinks(s.out)
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(s.out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if target, err := os.Readlink(p); err == nil && filepath.IsAbs(target) && len(rooted) > 0 && rooted[0] {
			return nil
		}
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil // dangling or looping: points nowhere, so nowhere outside
		}
		if rel, err := filepath.Rel(realOut, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			t.Errorf("symlink %s resolves outside the extraction dir: %s", p, resolved)
		}
		return nil
	})
}

// snapshot describes the tree under dir, one line per path, so whole trees
// compare in one assertion.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			got[rel] = "-> " + target
		case fi.IsDir():
			got[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = fmt.Sprintf("file %o %s", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func diffTrees(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("missing %s (want %s)", k, w)
		} else if g != w {
			t.Errorf("%s: got %s, want %s", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s (%s)", k, g)
		}
	}
}

// allFormats ends with TarBzip2, so that Zip keeps its index (FuzzExtract's
// corpus selects by it).
var allFormats = []Format{Tar, TarGzip, TarXz, TarZstd, Zip, TarBzip2}

// sampleTree is a small release-like archive. lib has no directory entries
// so parents must be created implicitly; modes are deliberately odd to show
// they are normalized.
var sampleTree = []ent{
	{name: "./top/", typ: tar.TypeDir, mode: 0o700},
	{name: "./top/bin/", typ: tar.TypeDir},
	{name: "./top/bin/tool", mode: 0o700, body: "#!/bin/sh\n"},
	{name: "./top/bin/tool-link", typ: tar.TypeSymlink, link: "tool"},
	{name: "./top/README", mode: 0o600, body: "readme"},
	{name: "./top/lib/a/b/data.txt", mode: 0o664, body: "data"},
	{name: "./top/docs", typ: tar.TypeSymlink, link: "lib/a"},
	{name: "./top/share", typ: tar.TypeSymlink, link: "../top/lib"},
}

var sampleWant = map[string]string{
	"top":                  "dir 755",
	"top/bin":              "dir 755",
	"top/bin/tool":         "file 755 #!/bin/sh\n",
	"top/bin/tool-link":    "-> tool",
	"top/README":           "file 644 readme",
	"top/lib":              "dir 755",
	"top/lib/a":            "dir 755",
	"top/lib/a/b":          "dir 755",
	"top/lib/a/b/data.txt": "file 644 data",
	"top/docs":             "-> lib/a",
	"top/share":            "-> ../top/lib",
}

func TestRoundTrip(t *testing.T) {
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			ents := slices.Clone(sampleTree)
			want := maps(sampleWant)
			if f != Zip {
				ents = append(ents, ent{name: "./top/bin/tool2", typ: tar.TypeLink, link: "./top/bin/tool"})
				want["top/bin/tool2"] = "file 755 #!/bin/sh\n"
			}
			s := newSandbox(t, f, build(t, f, ents))
			if err := Extract(context.Background(), s.src, f, s.out, Options{}); err != nil {
				t.Fatal(err)
			}
			diffTrees(t, snapshot(t, s.out), want)
			s.checkContained(t)
		})
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestStripAndInclude(t *testing.T) {
	tests := []struct {
		name    string
		opt     Options
		want    []string // paths expected in the output
		wantErr string
	}{
		{name: "strip 1", opt: Options{Strip: 1},
			want: []string{"bin", "bin/tool", "bin/tool-link", "README", "lib", "lib/a", "lib/a/b", "lib/a/b/data.txt", "docs"}},
		{name: "strip 2 skips short entries", opt: Options{Strip: 2},
			want: []string{"tool", "tool-link", "a", "a/b", "a/b/data.txt"}},
		{name: "strip beyond depth", opt: Options{Strip: 9}, want: nil},
		{name: "include dir takes subtree", opt: Options{Strip: 1, Include: []string{"bin"}},
			want: []string{"bin", "bin/tool", "bin/tool-link"}},
		{name: "include with ./ and glob", opt: Options{Strip: 1, Include: []string{"./README", "lib/*/b"}},
			want: []string{"README", "lib", "lib/a", "lib/a/b", "lib/a/b/data.txt"}},
		{name: "include file creates parents", opt: Options{Strip: 1, Include: []string{"lib/a/b/data.txt"}},
			want: []string{"lib", "lib/a", "lib/a/b", "lib/a/b/data.txt"}},
		{name: "include unmatched", opt: Options{Strip: 1, Include: []string{"bin", "nope", "top/*"}},
			wantErr: `include pattern(s) matched no entry: "nope", "top/*"; the archive's names (patterns match names after strip: 1): "bin", "bin/tool", "bin/tool-link", "README", "lib`},
		{name: "include bad pattern", opt: Options{Include: []string{"[x"}},
			wantErr: `include pattern "[x"`},
		{name: "include empty pattern", opt: Options{Include: []string{"./"}},
			wantErr: `include pattern "./" is empty`},
	}
	// Drop the symlink that only resolves inside with its top directory.
	ents := slices.DeleteFunc(slices.Clone(sampleTree), func(e ent) bool { return e.name == "./top/share" })
	for _, f := range []Format{TarGzip, Zip} {
		for _, tt := range tests {
			t.Run(string(f)+"/"+tt.name, func(t *testing.T) {
				s := newSandbox(t, f, build(t, f, ents))
				err := Extract(context.Background(), s.src, f, s.out, tt.opt)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got := slices.Sorted(mapKeys(snapshot(t, s.out)))
				want := slices.Sorted(slices.Values(tt.want))
				if !slices.Equal(got, want) {
					t.Errorf("got %q\nwant %q", got, want)
				}
			})
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func manyEntries(n int) []ent {
	ents := make([]ent, n)
	for i := range ents {
		ents[i] = ent{name: fmt.Sprintf("f%d", i), body: "x"}
	}
	return ents
}

type hostileCase struct {
	name    string
	format  Format
	data    func(t testing.TB, canary string) []byte
	opt     Options
	wantErr string
}

func tarCase(name string, wantErr string, ents func(canary string) []ent) hostileCase {
	return hostileCase{name: name, format: Tar, wantErr: wantErr,
		data: func(t testing.TB, canary string) []byte { return tarBytes(t, ents(canary)) }}
}

func zipCase(name string, wantErr string, ents func(canary string) []ent) hostileCase {
	return hostileCase{name: name, format: Zip, wantErr: wantErr,
		data: func(t testing.TB, canary string) []byte { return zipBytes(t, ents(canary)) }}
}

func fixed(ents ...ent) func(string) []ent { return func(string) []ent { return ents } }

// hostileCases point absolute paths at the sandbox's canary dir rather than
// real system paths, so a regression cannot damage the machine running
// the tests (which may well be root in a container).
var hostileCases = []hostileCase{
	tarCase("dotdot entry", "path leaves the archive root", fixed(ent{name: "../canary/evil", body: "x"})),
	tarCase("nested dotdot", "path leaves the archive root", fixed(ent{name: "a/../../canary/evil", body: "x"})),
	tarCase("absolute path", "absolute path", func(c string) []ent {
		return []ent{{name: filepath.ToSlash(c) + "/evil", body: "x"}}
	}),
	tarCase("symlink to /etc", `symlink target "/etc" is absolute`,
		fixed(ent{name: "etc", typ: tar.TypeSymlink, link: "/etc"})),
	tarCase("symlink dotdot", `symlink target "../../x" leaves the archive root`,
		fixed(ent{name: "a/x", typ: tar.TypeSymlink, link: "../../x"})),
	tarCase("symlink to canary then write", "is absolute", func(c string) []ent {
		return []ent{
			{name: "a", typ: tar.TypeSymlink, link: c},
			{name: "a/passwd", body: "x"},
		}
	}),
	tarCase("file through inner symlink", `path passes through symlink "a"`, fixed(
		ent{name: "sub/", typ: tar.TypeDir},
		ent{name: "a", typ: tar.TypeSymlink, link: "sub"},
		ent{name: "a/passwd", body: "x"},
	)),
	tarCase("dir through inner symlink", `path passes through symlink "a"`, fixed(
		ent{name: "a", typ: tar.TypeSymlink, link: "."},
		ent{name: "a/d/", typ: tar.TypeDir},
	)),
	tarCase("symlink via dot symlink", "may leave the archive root", fixed(
		ent{name: "l", typ: tar.TypeSymlink, link: "."},
		ent{name: "m", typ: tar.TypeSymlink, link: "l/../canary"},
	)),
	tarCase("hard link outside", `hard link target "../canary/x": path leaves the archive root`,
		fixed(ent{name: "h", typ: tar.TypeLink, link: "../canary/x"})),
	tarCase("hard link absolute", "absolute path", func(c string) []ent {
		return []ent{{name: "h", typ: tar.TypeLink, link: filepath.ToSlash(c) + "/x"}}
	}),
	tarCase("hard link not yet extracted", `hard link target "later" not yet extracted`, fixed(
		ent{name: "h", typ: tar.TypeLink, link: "later"},
		ent{name: "later", body: "x"},
	)),
	tarCase("hard link through symlink", `passes through symlink "s"`, fixed(
		ent{name: "d/f", body: "x"},
		ent{name: "s", typ: tar.TypeSymlink, link: "d"},
		ent{name: "h", typ: tar.TypeLink, link: "s/f"},
	)),
	tarCase("hard link to escaping symlink", "leaves the archive root", fixed(
		ent{name: "a/b/l", typ: tar.TypeSymlink, link: "../x"},
		ent{name: "h", typ: tar.TypeLink, link: "a/b/l"},
	)),
	tarCase("file replaces dir", "would replace a directory an earlier entry made, and all it holds", fixed(
		ent{name: "d/", typ: tar.TypeDir},
		ent{name: "d/x", body: "x"},
		ent{name: "d", body: "x"},
	)),
	tarCase("file under file", `parent "d" is not a directory`, fixed(
		ent{name: "d", body: "x"},
		ent{name: "d/e", body: "x"},
	)),
	// Extraction holds the directories of the last entry open; what the
	// next entries place beside or instead of them must be checked anyway.
	tarCase("symlink beside the open directory", `path passes through symlink "a/c"`, fixed(
		ent{name: "a/b/f", body: "x"},
		ent{name: "a/c", typ: tar.TypeSymlink, link: "b"},
		ent{name: "a/c/g", body: "x"},
	)),
	tarCase("symlink replacing the open directory", "would replace a directory", fixed(
		ent{name: "a/b/f", body: "x"},
		ent{name: "a/b", typ: tar.TypeSymlink, link: "."},
		ent{name: "a/b/g", body: "x"},
	)),
	tarCase("file replacing an open ancestor", "would replace a directory", fixed(
		ent{name: "a/b/c/f", body: "x"},
		ent{name: "a", body: "x"},
	)),
	tarCase("hard link through symlink in the open directory", `hard link target "a/s/f" passes through symlink "a/s"`, fixed(
		ent{name: "a/b/f", body: "x"},
		ent{name: "a/s", typ: tar.TypeSymlink, link: "b"},
		ent{name: "a/h", typ: tar.TypeLink, link: "a/s/f"},
	)),
	tarCase("hard link placed through symlink", `path passes through symlink "s"`, fixed(
		ent{name: "d/f", body: "x"},
		ent{name: "s", typ: tar.TypeSymlink, link: "d"},
		ent{name: "s/h", typ: tar.TypeLink, link: "d/f"},
	)),
	tarCase("symlink up from the open directory, then through it", `path passes through symlink "a/b/up"`, fixed(
		ent{name: "a/b/f", body: "x"},
		ent{name: "a/b/up", typ: tar.TypeSymlink, link: "../.."},
		ent{name: "a/b/up/canary/evil", body: "x"},
	)),
	// Windows images are built from these trees, so '\' is read as a
	// separator and drive letters as absolute in tars too.
	tarCase("tar symlink backslash dotdot", `symlink target "..\\..\\Windows" leaves the archive root`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `..\..\Windows`})),
	tarCase("tar symlink backslash rooted", `symlink target "\\Windows" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `\Windows`})),
	tarCase("tar symlink drive", `symlink target "C:\\Windows" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `C:\Windows`})),
	tarCase("tar symlink drive relative", `symlink target "C:foo" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `C:foo`})),
	tarCase("tar symlink forward drive", `symlink target "c:/Windows" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `c:/Windows`})),
	tarCase("tar symlink mixed separators", `symlink target "..\\../x" leaves the archive root`,
		fixed(ent{name: "d/l", typ: tar.TypeSymlink, link: `..\../x`})),
	tarCase("tar symlink backslash after name", `symlink target "a\\..\\..\\x" may leave the archive root`,
		fixed(ent{name: "d/l", typ: tar.TypeSymlink, link: `a\..\..\x`})),
	// Only the '/' reading sees a named component (".\.") before "..".
	tarCase("tar symlink dot backslash dot", `symlink target ".\\./../x" may leave the archive root`,
		fixed(ent{name: "d/l", typ: tar.TypeSymlink, link: `.\./../x`})),
	tarCase("tar name backslash dotdot", "path leaves the archive root", fixed(ent{name: `..\canary\evil`, body: "x"})),
	tarCase("tar name backslash inner dotdot", "path leaves the archive root", fixed(ent{name: `a\..\..\evil`, body: "x"})),
	tarCase("tar name backslash rooted", "absolute path", fixed(ent{name: `\evil`, body: "x"})),
	tarCase("tar name drive", "begins with a drive letter", fixed(ent{name: `C:evil`, body: "x"})),
	tarCase("tar name a:b", "begins with a drive letter", fixed(ent{name: `a:b`, body: "x"})),
	// Five chains of 1000 directories, a few hundred bytes compressed,
	// took 40 s to create before depth was bounded.
	{name: "deep chains", format: TarGzip, wantErr: `entry "a/d/d/`,
		data: func(t testing.TB, _ string) []byte {
			var ents []ent
			for _, b := range []string{"a", "b", "c", "d", "e"} {
				ents = append(ents, ent{name: b + "/" + strings.Repeat("d/", 1000) + "f", body: "x"})
			}
			return compress(t, TarGzip, tarBytes(t, ents))
		}},
	tarCase("tar name too deep", "more than 256 components", fixed(ent{name: strings.Repeat("d/", 257) + "f", body: "x"})),
	tarCase("tar name too long", "or 4096 bytes", fixed(ent{name: strings.Repeat("n", 200) + "/" + strings.Repeat(strings.Repeat("x", 250)+"/", 17) + "f", body: "x"})),
	tarCase("tar hard link backslash", `hard link target "..\\canary\\x": path leaves the archive root`,
		fixed(ent{name: "h", typ: tar.TypeLink, link: `..\canary\x`})),
	zipCase("zip symlink drive relative", `symlink target "C:foo" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `C:foo`})),
	zipCase("zip symlink backslash rooted", `symlink target "\\Windows" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `\Windows`})),
	zipCase("zip backslash dotdot", "path leaves the archive root", fixed(ent{name: `..\canary\evil`, body: "x"})),
	zipCase("zip drive letter", "begins with a drive letter", fixed(ent{name: `C:\evil`, body: "x"})),
	// A zip has no append order: of two entries of one name, readers
	// take either.
	zipCase("zip duplicate name", `the zip holds this name twice (also as "a.txt")`, fixed(ent{name: "a.txt", body: "x"}, ent{name: "a.txt", body: "y"})),
	zipCase("zip duplicate name by separator", `the zip holds this name twice (also as "d/a")`, fixed(ent{name: "d/a", body: "x"}, ent{name: `d\a`, body: "y", dos: true})),
	zipCase("zip file then directory of one name", `the zip holds this name twice (also as "d")`, fixed(ent{name: "d", body: "x"}, ent{name: "d/", typ: tar.TypeDir})),
	zipCase("zip backslash rooted", "absolute path", fixed(ent{name: `\evil`, body: "x"})),
	zipCase("zip symlink to /etc", `symlink target "/etc" is absolute`,
		fixed(ent{name: "etc", typ: tar.TypeSymlink, link: "/etc"})),
	zipCase("zip symlink backslash dotdot", "leaves the archive root",
		fixed(ent{name: "x", typ: tar.TypeSymlink, link: `..\canary`})),
	zipCase("zip file through symlink", `path passes through symlink "a"`, fixed(
		ent{name: "a", typ: tar.TypeSymlink, link: "."},
		ent{name: "a/passwd", body: "x"},
	)),
	{name: "zip encrypted entry", format: Zip, wantErr: `entry "secret": encrypted, and pallet does not decrypt archives`,
		data: func(t testing.TB, _ string) []byte { return encryptedZip(t) }},
	{name: "zip bomb", format: Zip, wantErr: "expands beyond the limit of 1048576 bytes",
		opt:  Options{MaxBytes: 1 << 20},
		data: func(t testing.TB, _ string) []byte { return zipBomb(t, 50<<20) }},
	{name: "zip lying size", format: Zip, wantErr: `entry "liar": content does not match declared size 10`,
		opt:  Options{MaxBytes: 1 << 20},
		data: func(t testing.TB, _ string) []byte { return lyingZip(t, 50<<20) }},
	{name: "gzip bomb", format: TarGzip, wantErr: "expands beyond the limit of 1048576 bytes",
		opt: Options{MaxBytes: 1 << 20},
		data: func(t testing.TB, _ string) []byte {
			return gzipZeros(t, tarPrefix(t, nil, "zeros", 8<<20), 9<<20)
		}},
	{name: "bytes summed over entries", format: TarZstd, wantErr: `entry "c": archive expands beyond`,
		opt: Options{MaxBytes: 1 << 20},
		data: func(t testing.TB, _ string) []byte {
			big := strings.Repeat("y", 400<<10)
			return compress(t, TarZstd, tarBytes(t, []ent{{name: "a", body: big}, {name: "b", body: big}, {name: "c", body: big}}))
		}},
	{name: "tar entry bomb", format: TarGzip, wantErr: "more than 1000 entries",
		opt: Options{MaxEntries: 1000},
		data: func(t testing.TB, _ string) []byte {
			return compress(t, TarGzip, tarBytes(t, manyEntries(1200)))
		}},
	{name: "zip entry bomb", format: Zip, wantErr: "more than 1000 entries",
		opt:  Options{MaxEntries: 1000},
		data: func(t testing.TB, _ string) []byte { return zipStoredMany(t, 1001) }},
	// RootedLinks keeps an absolute link as it is, as a link of the
	// image's root, but never follows it, nor lets it climb out.
	rooted(tarCase("rooted link to canary then write", `path passes through symlink "a"`, func(c string) []ent {
		return []ent{
			{name: "a", typ: tar.TypeSymlink, link: c},
			{name: "a/passwd", body: "x"},
		}
	})),
	rooted(tarCase("rooted link to canary then hard link through it", `hard link target "a/x" passes through symlink "a"`, func(c string) []ent {
		return []ent{
			{name: "a", typ: tar.TypeSymlink, link: c},
			{name: "h", typ: tar.TypeLink, link: "a/x"},
		}
	})),
	rooted(tarCase("rooted link climbing", `symlink target "/../x" leaves the archive root`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: "/../x"}))),
	rooted(tarCase("rooted link climbing after a name", `symlink target "/a/../../x" may leave the archive root`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: "/a/../../x"}))),
	rooted(tarCase("rooted link backslash", `symlink target "\\Windows" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: `\Windows`}))),
	rooted(zipCase("rooted link in a zip", `symlink target "/etc" is absolute`,
		fixed(ent{name: "l", typ: tar.TypeSymlink, link: "/etc"}))),
}

// rooted is c with Options.RootedLinks.
func rooted(c hostileCase) hostileCase {
	c.opt.RootedLinks = true
	return c
}

// With RootedLinks, an absolute tar link is kept as it is: a link from
// the root of what is unpacked, as a root file system's archive holds
// /etc/localtime.
func TestRootedLinks(t *testing.T) {
	s := newSandbox(t, Tar, tarBytes(t, []ent{
		{name: "etc/", typ: tar.TypeDir},
		{name: "etc/localtime", typ: tar.TypeSymlink, link: "/usr/share/zoneinfo/UTC"},
		{name: "h", typ: tar.TypeLink, link: "etc/localtime"},
	}))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{RootedLinks: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"etc/localtime", "h"} {
		if got, err := os.Readlink(filepath.Join(s.out, p)); err != nil || got != "/usr/share/zoneinfo/UTC" {
			t.Errorf("%s: link to %q (%v), want /usr/share/zoneinfo/UTC", p, got, err)
		}
	}
	s.checkContained(t, true)
}

// encryptedZip is a zip with an entry flagged encrypted whose bytes are
// not: archive/zip would place them as they are.
func encryptedZip(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "secret", Method: zip.Store, Flags: 0x1})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "ciphertext")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestHostile(t *testing.T) {
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t, tc.format, nil)
			if err := os.WriteFile(s.src, tc.data(t, s.canary), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Extract(context.Background(), s.src, tc.format, s.out, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "extract "+s.src+": ") {
				t.Errorf("error %q does not name the archive", err)
			}
			s.checkContained(t, tc.opt.RootedLinks)
			var size int64
			filepath.WalkDir(s.out, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if fi, err := d.Info(); err == nil {
						size += fi.Size()
					}
				}
				return nil
			})
			if size > 1<<20 {
				t.Errorf("%d bytes written despite the limit", size)
			}
		})
	}
}

// TestBackslashesInsideTheTree shows what the Windows reading of '\' still
// accepts: targets and names that stay inside the tree under both readings.
// A tar places them literally on Linux; a zip always splits on '\'.
func TestBackslashesInsideTheTree(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows '\\' separates components in every format")
	}
	ents := []ent{
		{name: "sub/", typ: tar.TypeDir},
		{name: `dir\file`, body: "x"},
		{name: "l", typ: tar.TypeSymlink, link: `sub\file`},
		{name: "sub/l2", typ: tar.TypeSymlink, link: `..\dir\file`},
	}
	kept := map[string]string{
		"sub":      "dir 755",
		`dir\file`: "file 644 x",
		"l":        `-> sub\file`,
		"sub/l2":   `-> ..\dir\file`,
	}
	// Written on Windows (PowerShell 5's Compress-Archive), where a zip
	// has no symlinks; unzip splits such a name only where it holds no
	// '/'.
	dos := []ent{
		{name: "sub/", typ: tar.TypeDir, dos: true},
		{name: `dir\file`, body: "x", dos: true},
		{name: `sub/a\b`, body: "y", dos: true},
	}
	for _, tt := range []struct {
		name   string
		format Format
		ents   []ent
		want   map[string]string
	}{
		{"tar", Tar, ents, kept},
		// Made on Unix, as unzip reads it: '\' is a character, as in a tar.
		{"zip", Zip, ents, kept},
		{"zip from Windows", Zip, dos, map[string]string{
			"sub":      "dir 755",
			"dir":      "dir 755",
			"dir/file": "file 644 x",
			`sub/a\b`:  "file 644 y",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, tt.format, build(t, tt.format, tt.ents))
			if err := Extract(context.Background(), s.src, tt.format, s.out, Options{}); err != nil {
				t.Fatal(err)
			}
			diffTrees(t, snapshot(t, s.out), tt.want)
		})
	}
}

func TestErrorNamesArchiveAndEntry(t *testing.T) {
	s := newSandbox(t, TarGzip, build(t, TarGzip, []ent{{name: "../../etc/passwd", body: "x"}}))
	err := Extract(context.Background(), s.src, TarGzip, s.out, Options{})
	want := fmt.Sprintf("extract %s: entry %q: path leaves the archive root", s.src, "../../etc/passwd")
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

func TestDuplicatesAndLinks(t *testing.T) {
	// A later copy of a file wins, and must not rewrite an earlier hard
	// link to the old version through the shared inode.
	ents := []ent{
		{name: "a", body: "old"},
		{name: "h", typ: tar.TypeLink, link: "a"},
		{name: "a", mode: 0o755, body: "new"},
		{name: "d/", typ: tar.TypeDir},
		{name: "d/", typ: tar.TypeDir, mode: 0o700},
		{name: "self", body: "s"},
		{name: "self", typ: tar.TypeLink, link: "self"},
		{name: "ln", typ: tar.TypeSymlink, link: "a"},
		{name: "sub/ln2", typ: tar.TypeLink, link: "ln"},
	}
	s := newSandbox(t, Tar, build(t, Tar, ents))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{}); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, snapshot(t, s.out), map[string]string{
		"a":       "file 755 new",
		"h":       "file 644 old",
		"d":       "dir 755",
		"self":    "file 644 s",
		"ln":      "-> a",
		"sub":     "dir 755",
		"sub/ln2": "-> a",
	})
}

func TestSkipsSpecialEntries(t *testing.T) {
	ents := []ent{
		{name: "/tmp/GlobalHead.1.1", typ: tar.TypeXGlobalHeader},
		{name: "dev/null", typ: tar.TypeChar},
		{name: "/dev/abs", typ: tar.TypeBlock},
		{name: "fifo", typ: tar.TypeFifo},
		{name: "kept", body: "k"},
	}
	s := newSandbox(t, TarXz, build(t, TarXz, ents))
	if err := Extract(context.Background(), s.src, TarXz, s.out, Options{}); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, snapshot(t, s.out), map[string]string{"kept": "file 644 k"})
}

func TestPreconditions(t *testing.T) {
	data := build(t, Tar, []ent{{name: "f", body: "x"}})

	t.Run("dir not empty", func(t *testing.T) {
		s := newSandbox(t, Tar, data)
		os.WriteFile(filepath.Join(s.out, "existing"), nil, 0o644)
		err := Extract(context.Background(), s.src, Tar, s.out, Options{})
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("dir missing", func(t *testing.T) {
		s := newSandbox(t, Tar, data)
		if err := Extract(context.Background(), s.src, Tar, filepath.Join(s.out, "nope"), Options{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		s := newSandbox(t, Tar, data)
		err := Extract(context.Background(), s.src, "rar", s.out, Options{})
		if err == nil || !strings.Contains(err.Error(), "unsupported format") {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		s := newSandbox(t, Tar, data)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Extract(ctx, s.src, Tar, s.out, Options{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
	})
	t.Run("wrong format", func(t *testing.T) {
		s := newSandbox(t, TarGzip, data)
		if err := Extract(context.Background(), s.src, TarGzip, s.out, Options{}); err == nil {
			t.Fatal("plain tar accepted as gzip")
		}
	})
	t.Run("corrupt gzip trailer", func(t *testing.T) {
		gz := compress(t, TarGzip, data)
		gz[len(gz)-6] ^= 0xff // inside the CRC32
		s := newSandbox(t, TarGzip, gz)
		err := Extract(context.Background(), s.src, TarGzip, s.out, Options{})
		if err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("error = %v, want a checksum error", err)
		}
	})
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		want Format
		ok   bool
	}{
		{"cni-plugins-linux-amd64-v1.4.0.tgz", TarGzip, true},
		{"x.TAR.GZ", TarGzip, true},
		{"x.tar", Tar, true},
		{"x.tar.xz", TarXz, true},
		{"x.txz", TarXz, true},
		{"x.tar.zst", TarZstd, true},
		{"x.TZST", TarZstd, true},
		{"openvswitch-3.3.0.zip", Zip, true},
		{"busybox-1.36.1.tar.bz2", TarBzip2, true},
		{"x.tbz2", TarBzip2, true},
		{"x.TBZ", TarBzip2, true},
		{"x.gz", "", false},
		{"x.bz2", "", false},
		{".tbz", "", false},
		{".tar", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Detect(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Detect(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzExtract feeds arbitrary bytes to every format and checks the one
// property that matters: nothing is created outside the target directory,
// and no symlink inside it leads out.
func FuzzExtract(f *testing.F) {
	for _, tc := range hostileCases {
		if strings.Contains(tc.name, "bomb") || strings.Contains(tc.name, "bytes") {
			continue // large seeds would slow every `go test` run
		}
		sel := uint8(0) // Tar
		if tc.format == Zip {
			sel = 4
		}
		f.Add(tc.data(f, "/nonexistent/canary"), sel)
	}
	f.Add(zipBomb(f, 2<<20), uint8(4))
	for i, format := range allFormats {
		if _, err := exec.LookPath("bzip2"); err != nil && format == TarBzip2 {
			continue // fixture.NeedBzip2 would skip the whole target (the other tests fail in CI)
		}
		f.Add(build(f, format, sampleTree), uint8(i))
	}
	f.Add(build(f, TarGzip, []ent{
		{name: "l", typ: tar.TypeSymlink, link: "."},
		{name: "l/x", body: "x"},
		{name: "h", typ: tar.TypeLink, link: "l/x"},
	}), uint8(1))

	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		format := allFormats[int(sel)%len(allFormats)]
		s := newSandbox(t, format, data)
		opt := Options{Strip: int(sel/8) % 3, MaxBytes: 1 << 20, MaxEntries: 256, MaxWindow: 1 << 20}
		if sel&0x80 != 0 {
			opt.Include = []string{"top/*"}
		}
		Extract(context.Background(), s.src, format, s.out, opt)
		s.checkContained(t)
	})
}

// TestRandomTreesStayContained throws many small archives built from a
// tiny vocabulary at Extract. Unlike byte-level fuzzing, nearly every one
// parses, so the interplay of symlinks, hard links and "..", which is where
// escapes hide, actually gets exercised.
func TestRandomTreesStayContained(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Entry names with ".." are refused outright, so only link targets
	// get them; otherwise almost no archive would get past its first entry.
	randPath := func(maxDepth int, dotdot bool) string {
		words := []string{"a", "b", "l", "."}
		if dotdot {
			words = append(words, "..", "..")
		}
		parts := make([]string, 1+rng.IntN(maxDepth))
		for i := range parts {
			parts[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(parts, "/")
	}
	types := []byte{tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeSymlink, tar.TypeLink}
	for i := range 500 {
		ents := make([]ent, 2+rng.IntN(8))
		for j := range ents {
			e := ent{name: randPath(3, false), typ: types[rng.IntN(len(types))], body: "x"}
			switch e.typ {
			case tar.TypeSymlink:
				e.link = randPath(4, true)
			case tar.TypeLink:
				e.link = randPath(3, false)
			}
			ents[j] = e
		}
		format := Tar
		if i%3 == 0 {
			format = Zip
			ents = slices.DeleteFunc(ents, func(e ent) bool { return e.typ == tar.TypeLink })
		}
		s := newSandbox(t, format, build(t, format, ents))
		Extract(context.Background(), s.src, format, s.out, Options{})
		s.checkContained(t)
		if t.Failed() {
			t.Fatalf("archive: %+v", ents)
		}
	}
}

// Written reports every regular file as it was written, with the digest of
// what is on disk: a caller may take it instead of reading the file, in
// every format. A hard link names a file reported already.
func TestWrittenReportsDigests(t *testing.T) {
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			ents := slices.Clone(sampleTree)
			if f != Zip {
				ents = append(ents, ent{name: "./top/bin/tool2", typ: tar.TypeLink, link: "./top/bin/tool"})
			}
			s := newSandbox(t, f, build(t, f, ents))
			got := map[string]string{}
			opt := Options{Written: func(path, sum string) {
				if _, twice := got[path]; twice {
					t.Errorf("%s reported twice", path)
				}
				got[path] = sum
			}}
			if err := Extract(context.Background(), s.src, f, s.out, opt); err != nil {
				t.Fatal(err)
			}
			files := 0
			err := filepath.WalkDir(s.out, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(data)
				want := hex.EncodeToString(sum[:])
				if filepath.Base(p) == "tool2" {
					if _, ok := got[p]; ok {
						t.Errorf("the hard link %s was reported", p)
					}
					return nil
				}
				files++
				if got[p] != want {
					t.Errorf("%s: reported %q, its content is %s", p, got[p], want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files == 0 || len(got) != files {
				t.Errorf("%d files reported, %d extracted", len(got), files)
			}
		})
	}
}

// Dirs reports the directories the archive holds entries for, by their
// path after Strip, and not those made only as parents of other entries.
func TestDirsReportsOwnEntries(t *testing.T) {
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			ents := []ent{
				{name: "top/", typ: tar.TypeDir, mode: 0o755},
				{name: "top/bin/x", typ: tar.TypeReg, mode: 0o755, body: "x"},
				{name: "top/etc/", typ: tar.TypeDir, mode: 0o755},
				{name: "top/etc/y", typ: tar.TypeReg, mode: 0o644, body: "y"},
				{name: "top/lib/a/z", typ: tar.TypeReg, mode: 0o644, body: "z"},
			}
			s := newSandbox(t, f, build(t, f, ents))
			var got []string
			opt := Options{Strip: 1, Dirs: func(rel string) { got = append(got, rel) }}
			if err := Extract(context.Background(), s.src, f, s.out, opt); err != nil {
				t.Fatal(err)
			}
			if want := []string{"etc"}; !slices.Equal(got, want) {
				t.Errorf("Dirs got %q, want %q", got, want)
			}
		})
	}
}

// matchBelow tries only the ancestors a pattern can match, and finds
// what trying every ancestor finds.
func TestMatchBelowTriesOnlyAncestorsItCanMatch(t *testing.T) {
	every := func(pattern, name string) bool {
		for {
			if ok, _ := path.Match(pattern, name); ok {
				return true
			}
			i := strings.LastIndexByte(name, '/')
			if i < 0 {
				return false
			}
			name = name[:i]
		}
	}
	names := []string{"a", "a/b", "a/b/c", "a/x/c/d", "bin/tool", "lib/a/b/data.txt", "a/b/", "x/y/z/w/v"}
	patterns := []string{"a", "a/b", "a/*", "*/b", "*", "*/*/*", "a/?/c", "a[/]b", "a[^x]b", "a[!x]b/c", `a\/b`, "a[.-0]b", "lib/*/b", "[a-z]/[a-z]", "x*y"}
	for _, p := range patterns {
		for _, n := range names {
			if got, want := matchBelow(p, n), every(p, n); got != want {
				t.Errorf("matchBelow(%q, %q) = %v, trying every ancestor gives %v", p, n, got, want)
			}
		}
	}

	calls := 0
	defer func(m func(string, string) (bool, error)) { match = m }(match)
	match = func(p, n string) (bool, error) { calls++; return path.Match(p, n) }
	deep := strings.Repeat("d/", maxDepth-1) + "f"
	if matchBelow("x*y", deep) || matchBelow("d/x", deep) {
		t.Fatal("matched")
	}
	if calls > 3 {
		t.Errorf("%d matches for two patterns against a name %d deep", calls, maxDepth)
	}
}

// A directory a zip lists twice is one directory: only two entries of a
// name that are not both directories are refused.
func TestZipDirectoryTwice(t *testing.T) {
	s := newSandbox(t, Zip, nil)
	data := zipBytes(t, []ent{{name: "d/", typ: tar.TypeDir}, {name: `d\`, typ: tar.TypeDir}, {name: "d/f", body: "x"}})
	if err := os.WriteFile(s.src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Extract(context.Background(), s.src, Zip, s.out, Options{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(s.out, "d", "f")); err != nil || string(b) != "x" {
		t.Errorf("d/f: %q, %v", b, err)
	}
}

// Headers tells, for each tar entry placed, the mode (special bits
// included) and owner its header gives, by its path after Strip, a
// later entry at one path after the earlier; the files on disk keep
// pallet's normalized modes. Entries left out (by Strip or Include) are
// not told.
func TestHeaders(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "top/", Typeflag: tar.TypeDir, Mode: 0o1777, Uid: 3, Gid: 4},
		{Name: "top/suid", Typeflag: tar.TypeReg, Mode: 0o4750, Uid: 1000, Gid: 42},
		{Name: "top/l", Typeflag: tar.TypeSymlink, Linkname: "suid", Mode: 0o777, Uid: 7, Gid: 8},
		{Name: "top/suid", Typeflag: tar.TypeReg, Mode: 0o2700, Uid: 5, Gid: 6},
		{Name: "top/skip", Typeflag: tar.TypeReg, Mode: 0o600, Uid: 9, Gid: 9},
		{Name: "top/d/", Typeflag: tar.TypeDir, Mode: 0o700},
		{Name: "lone", Typeflag: tar.TypeReg, Mode: 0o600},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Tar, buf.Bytes())
	got := map[string]Header{}
	opt := Options{Strip: 1, Include: []string{"suid", "l", "d"}, Headers: func(rel string, h Header) { got[rel] = h }}
	if err := Extract(context.Background(), s.src, Tar, s.out, opt); err != nil {
		t.Fatal(err)
	}
	want := map[string]Header{
		"suid": {Mode: 0o700 | fs.ModeSetgid, UID: 5, GID: 6},
		"d":    {Mode: 0o700, Dir: true},
		"l":    {Mode: 0o777, UID: 7, GID: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("headers told\n got %v\nwant %v", got, want)
	}
	info, err := os.Stat(filepath.Join(s.out, "suid"))
	if err != nil {
		t.Fatal(err)
	}
	if m := info.Mode(); m != 0o755 {
		t.Errorf("suid on disk is %v, want the normalized -rwxr-xr-x", m)
	}
}

// Links tells the groups the archive's hard links make, from its entries
// in their order: a link to a link joins the first file's group, a later
// entry at a name takes the name out of its group (the names linked to
// the file it replaces stay one group), a hard link to a symlink is in
// none, and names Strip and Include leave out are not told.
func TestLinks(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "top/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "top/perl", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1},
		{Name: "top/perl5.36", Typeflag: tar.TypeLink, Linkname: "top/perl"},
		{Name: "top/sub/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "top/sub/perl", Typeflag: tar.TypeLink, Linkname: "top/perl5.36"},
		{Name: "top/gzip", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1},
		{Name: "top/gunzip", Typeflag: tar.TypeLink, Linkname: "top/gzip"},
		{Name: "top/zcat", Typeflag: tar.TypeLink, Linkname: "top/gzip"},
		// gzip is a new file: gunzip and zcat keep the old one.
		{Name: "top/gzip", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1},
		{Name: "top/lone", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1},
		{Name: "top/self", Typeflag: tar.TypeLink, Linkname: "top/lone"},
		{Name: "top/self", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1},
		{Name: "top/sym", Typeflag: tar.TypeSymlink, Linkname: "perl"},
		{Name: "top/sym2", Typeflag: tar.TypeLink, Linkname: "top/sym"},
		{Name: "top/skip", Typeflag: tar.TypeLink, Linkname: "top/perl"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Tar, buf.Bytes())
	var got [][]string
	opt := Options{Strip: 1, Include: []string{"perl", "perl5.36", "sub", "gzip", "gunzip", "zcat", "lone", "self", "sym", "sym2"},
		Links: func(names []string) { got = append(got, names) }}
	if err := Extract(context.Background(), s.src, Tar, s.out, opt); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"gunzip", "zcat"}, {"perl", "perl5.36", "sub/perl"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups told\n got %q\nwant %q", got, want)
	}
}

// A name a later entry replaces is not reported with what was first
// written there: a hard link put at it names another file, whose content
// that digest is not, and a caller keying digests by file identity would
// take it for that file's.
func TestWrittenForgetsReplacedNames(t *testing.T) {
	s := newSandbox(t, Tar, build(t, Tar, []ent{
		{name: "t", body: "two"},
		{name: "a", body: "one"},
		{name: "a", typ: tar.TypeLink, link: "t"},
		{name: "b", body: "one"},
		{name: "b", body: "three"},
	}))
	got := map[string]string{}
	opt := Options{Written: func(path, sum string) { got[filepath.Base(path)] = sum }}
	if err := Extract(context.Background(), s.src, Tar, s.out, opt); err != nil {
		t.Fatal(err)
	}
	hex := func(s string) string { h := sha256.Sum256([]byte(s)); return fmt.Sprintf("%x", h) }
	want := map[string]string{"t": hex("two"), "b": hex("three")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reported %v, want %v", got, want)
	}
}

// A later entry replaces an earlier one at its name (TestLaterEntryReplacesAsGNUTar):
// no order of symlinks, directories and hard links at one name, spelled
// "./a", "a/" or "a//", makes extraction write through a symlink, out of
// the root or into the canary, with links kept from the root too.
func TestLaterEntriesStayContained(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rooted  bool
		ents    func(canary string) []ent
		wantErr string // "" when the archive unpacks, contained
		want    map[string]string
	}{
		{"rooted link to the canary replaced by a directory, then written in", true, func(c string) []ent {
			return []ent{
				{name: "a", typ: tar.TypeSymlink, link: c},
				{name: "./a//", typ: tar.TypeDir},
				{name: "a/passwd", body: "x"},
			}
		}, "", map[string]string{"a": "dir ", "a/passwd": "file x"}},
		{"empty directory replaced by a rooted link to the canary, then written through", true, func(c string) []ent {
			return []ent{
				{name: "a/", typ: tar.TypeDir},
				{name: "./a", typ: tar.TypeSymlink, link: c},
				{name: "a/passwd", body: "x"},
			}
		}, `path passes through symlink "a"`, nil},
		{"open directory replaced by a symlink to the root, then a file below it", false, func(string) []ent {
			return []ent{
				{name: "d/e/", typ: tar.TypeDir},
				{name: "d/e", typ: tar.TypeSymlink, link: ".."},
				{name: "d/e/x", body: "x"},
			}
		}, `path passes through symlink "d/e"`, nil},
		{"open directory replaced by a symlink, then a directory below it", false, func(string) []ent {
			return []ent{
				{name: "d/e/", typ: tar.TypeDir},
				{name: "d/e", typ: tar.TypeSymlink, link: "."},
				{name: "d/e/f/", typ: tar.TypeDir},
			}
		}, `path passes through symlink "d/e"`, nil},
		{"hard link at a symlink's name is made afresh, not through it", true, func(c string) []ent {
			return []ent{
				{name: "t", body: "t"},
				{name: "a", typ: tar.TypeSymlink, link: c + "/x"},
				{name: "a", typ: tar.TypeLink, link: "t"},
			}
		}, "", map[string]string{"t": "file t", "a": "file t"}},
		{"hard link to a name a rooted symlink replaced is that symlink again", true, func(c string) []ent {
			return []ent{
				{name: "t", body: "t"},
				{name: "t", typ: tar.TypeSymlink, link: c},
				{name: "h", typ: tar.TypeLink, link: "./t"},
				{name: "h/x", body: "x"},
			}
		}, `path passes through symlink "h"`, nil},
		{"hard link through a directory a symlink replaced", false, func(string) []ent {
			return []ent{
				{name: "d/f", body: "f"},
				{name: "e/", typ: tar.TypeDir},
				{name: "e", typ: tar.TypeSymlink, link: "d"},
				{name: "h", typ: tar.TypeLink, link: "e/f"},
			}
		}, `hard link target "e/f" passes through symlink "e"`, nil},
		{"a directory holding files is not replaced", false, func(string) []ent {
			return []ent{
				{name: "d/f", body: "f"},
				{name: "d", typ: tar.TypeSymlink, link: "."},
			}
		}, "would replace a directory an earlier entry made, and all it holds", nil},
		{"hard link to a file a directory replaced", false, func(string) []ent {
			return []ent{
				{name: "f", body: "f"},
				{name: "f/", typ: tar.TypeDir},
				{name: "h", typ: tar.TypeLink, link: "f"},
			}
		}, `hard link target "f" is a directory`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t, Tar, nil)
			if err := os.WriteFile(s.src, tarBytes(t, tc.ents(filepath.ToSlash(s.canary))), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Extract(context.Background(), s.src, Tar, s.out, Options{RootedLinks: tc.rooted})
			s.checkContained(t, tc.rooted)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "":
				diffTrees(t, shapes(snapshot(t, s.out)), tc.want)
			case err == nil || !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// The names told as one file (Options.Links) are the ones that are one
// file once the archive is unpacked, whatever later entries replaced: a
// name a symlink, a directory or a hard link to another file took leaves
// its group.
func TestLinksAfterLaterEntriesReplace(t *testing.T) {
	s := newSandbox(t, Tar, build(t, Tar, []ent{
		{name: "a", body: "a"},
		{name: "b", typ: tar.TypeLink, link: "a"},
		{name: "c", typ: tar.TypeLink, link: "a"},
		{name: "d", typ: tar.TypeLink, link: "a"},
		{name: "e", typ: tar.TypeLink, link: "a"},
		{name: "b", typ: tar.TypeSymlink, link: "a"},
		{name: "c/", typ: tar.TypeDir},
		{name: "n", body: "n"},
		{name: "d", typ: tar.TypeLink, link: "n"},
		{name: "a", body: "new a"},
		{name: "f", typ: tar.TypeLink, link: "e"},
	}))
	var got [][]string
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{Links: func(names []string) { got = append(got, names) }}); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"d", "n"}, {"e", "f"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("groups told\n got %q\nwant %q", got, want)
	}
	for _, g := range got {
		first, err := os.Stat(filepath.Join(s.out, g[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range g[1:] {
			if fi, err := os.Stat(filepath.Join(s.out, n)); err != nil || !os.SameFile(first, fi) {
				t.Errorf("%s and %s are told as one file but are not", g[0], n)
			}
		}
	}
}

// Names an include lists are looked up, not matched one by one against
// every entry: 100,000 of them held a build for minutes on an archive of
// as many entries. Only the patterns with wildcards are matched, and
// Patterns gives what Match gives.
func TestIncludeNamesLookedUp(t *testing.T) {
	const n = 2000
	var ents []ent
	var include []string
	for i := range n {
		ents = append(ents, ent{name: fmt.Sprintf("d/f%d", i), body: "x"})
		include = append(include, fmt.Sprintf("d/f%d", i))
	}
	ents = append(ents, ent{name: "lib/a/b", body: "x"}, ent{name: "other", body: "x"})
	include = append(include, "lib", "./d/f7", "d/f[0]")
	calls := 0
	defer func(m func(string, string) (bool, error)) { match = m }(match)
	match = func(p, n string) (bool, error) { calls++; return path.Match(p, n) }

	s := newSandbox(t, Tar, tarBytes(t, ents))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{Include: include}); err != nil {
		t.Fatal(err)
	}
	// One pattern with wildcards, of two components: tried against each
	// entry's first two, once for whether the entry is placed and once
	// for the patterns it credits.
	if calls > 2*len(ents) {
		t.Errorf("%d matches for %d entries and one pattern with wildcards", calls, len(ents))
	}
	for _, name := range []string{"d/f0", "d/f1999", "lib/a/b"} {
		if _, err := os.Stat(filepath.Join(s.out, name)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.out, "other")); err == nil {
		t.Error("other was extracted, though no pattern names it")
	}

	calls = 0
	p, err := NewPatterns(include)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !p.Match(e.name) && e.name != "other" {
			t.Errorf("Patterns.Match(%q) = false", e.name)
		}
	}
	if calls > len(ents) {
		t.Errorf("Patterns.Match: %d matches for %d names and one pattern with wildcards", calls, len(ents))
	}
	names := []string{"a", "a/b", "a/b/c", `a\b`, "a*b", "a/x/c/d", "lib", "lib/a", "libx", "d", "d/f1/x", "x/y/z"}
	patterns := [][]string{{"a"}, {"a/b", "x"}, {`a\b`}, {`a\*b`}, {"a*b"}, {"lib", "d/f1"}, {"./a/./b"}, {"a/*", "x/y"}}
	for _, ps := range patterns {
		p, err := NewPatterns(ps)
		if err != nil {
			t.Fatal(err)
		}
		clean, err := cleanPatterns(ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			// Each pattern tried in turn, as Include's rules read.
			want := slices.ContainsFunc(clean, func(c string) bool { return matchBelow(c, name) })
			if got := p.Match(name); got != want {
				t.Errorf("%q: Patterns.Match(%q) = %v, each pattern in turn gives %v", ps, name, got, want)
			}
		}
	}
	if _, err := NewPatterns([]string{"a["}); err == nil {
		t.Error("a malformed pattern was taken")
	}
}

// A zip whose end record declares more entries than its central directory
// holds is said to be damaged so, with the count, where archive/zip says
// only "unexpected EOF".
func TestZipDirectoryShortOfItsCount(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	end := bytes.LastIndex(data, []byte("PK\x05\x06"))
	// The records on this disk, and in all: 3, where the directory holds 1.
	data[end+8], data[end+9], data[end+10], data[end+11] = 3, 0, 3, 0
	src := filepath.Join(t.TempDir(), "bad.zip")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	err = Extract(context.Background(), src, Zip, t.TempDir(), Options{})
	if err == nil || !strings.Contains(err.Error(), "does not hold the 3 entries its end record declares") {
		t.Errorf("got %v, want the count its end record declares named", err)
	}
}
