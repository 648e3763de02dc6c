package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// rawTar is a tar of hdrs, each regular file holding its Linkname's
// length in 'x's when Size is set (Linkname is then cleared).
func rawTar(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		h.ModTime = time.Unix(1, 0)
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Many kinds of input, placed in a Windows image, give layers a Windows
// host imports: checked by the independent reader (checkWindowsLayout).
func TestWindowsLayersImportable(t *testing.T) {
	dir := t.TempDir()
	// A tar with a deep tree, non-ASCII names, an empty file and dir,
	// a large file, hard links and symlinks to a file and a directory.
	deep := "deep"
	for i := 0; i < 40; i++ {
		deep += fmt.Sprintf("/d%02d", i)
	}
	hdrs := []*tar.Header{
		{Name: deep + "/leaf.txt", Typeflag: tar.TypeReg, Size: 3},
		{Name: "naïve/日本語/Ωmega.txt", Typeflag: tar.TypeReg, Size: 5},
		{Name: "emoji/😀.txt", Typeflag: tar.TypeReg, Size: 1},
		{Name: "empty/", Typeflag: tar.TypeDir},
		{Name: "empty-file", Typeflag: tar.TypeReg},
		{Name: "big/blob.bin", Typeflag: tar.TypeReg, Size: 3 << 20},
		{Name: "bin/tool.txt", Typeflag: tar.TypeReg, Size: 7},
		{Name: "bin/tool-hard.txt", Typeflag: tar.TypeLink, Linkname: "bin/tool.txt"},
		{Name: "bin/tool-sym.txt", Typeflag: tar.TypeSymlink, Linkname: "tool.txt"},
		{Name: "bin/up", Typeflag: tar.TypeSymlink, Linkname: "../naïve"},
		{Name: "bin/back", Typeflag: tar.TypeSymlink, Linkname: `..\empty`},
	}
	if err := os.WriteFile(filepath.Join(dir, "tree.tar"), rawTar(t, hdrs...), 0o644); err != nil {
		t.Fatal(err)
	}
	// A zip that lists no directories.
	if err := os.WriteFile(filepath.Join(dir, "nodirs.zip"), fixture.Zip([]fixture.File{
		{Name: "a/b/c/one.txt", Content: "1"}, {Name: "a/b/two.txt", Content: "2"}, {Name: "A2/x.dll", Content: "dll"},
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	// A local directory with links, an empty directory, Unicode names.
	writeFile(t, filepath.Join(dir, "loc", "etc", "app.conf"), "conf")
	writeFile(t, filepath.Join(dir, "loc", "Straße", "ß.txt"), "s")
	if err := os.MkdirAll(filepath.Join(dir, "loc", "var", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"conf": "etc/app.conf", "etcdir": "etc"} {
		if err := os.Symlink(target, filepath.Join(dir, "loc", name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  tree: {local: {path: ./tree.tar, extract: {}}, licenses: none}
  nodirs: {local: {path: ./nodirs.zip, extract: {}}, licenses: none}
  loc: {local: {path: ./loc, links: keep}, licenses: none}
images:
  win:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
    files:
      - {artifact: tree, dest: /t/, layer: one}
      - {artifact: nodirs, dest: /z/, layer: one}
      - {artifact: loc, dest: /l/, layer: two}
      - {artifact: nodirs, dest: /Windows/System32/extra/, layer: three}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayout(t, out, "")
}

// Dockerfile builds with Windows stages: a Linux stage copied from, a COPY
// that replaces a file an earlier COPY wrote and one of the base's, the
// same directory spelled in two cases, an archive ADDed, onto the
// built-in base and onto a base with an os.version.
func TestWindowsDockerfileLayersImportable(t *testing.T) {
	dir := t.TempDir()
	windowsBase(t, filepath.Join(dir, "ltsc2022"), "10.0.20348.2582")
	writeFile(t, filepath.Join(dir, "ctx", "a", "app.conf"), "one")
	writeFile(t, filepath.Join(dir, "ctx", "b", "app.conf"), "two")
	writeFile(t, filepath.Join(dir, "ctx", "Data", "x.txt"), "x")
	writeFile(t, filepath.Join(dir, "ctx", "data2", "y.txt"), "y")
	// Named as the base's file it replaces: on the base with foreign
	// layers, a file copied to another name there is refused (pallet
	// cannot tell whether they hold a directory at that name).
	writeFile(t, filepath.Join(dir, "ctx", "SAM"), "not a hive")
	writeFile(t, filepath.Join(dir, "ctx", "empty.txt"), "")
	if err := os.MkdirAll(filepath.Join(dir, "ctx", "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ctx", "tree.tar"), rawTar(t,
		&tar.Header{Name: "u/ünï/ç.txt", Typeflag: tar.TypeReg, Size: 2},
		&tar.Header{Name: "u/link", Typeflag: tar.TypeSymlink, Linkname: "ünï"},
		&tar.Header{Name: "u/hard", Typeflag: tar.TypeLink, Linkname: "u/ünï/ç.txt"},
	), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, base := range []struct{ from, osVersion string }{
		{"windows-hostprocess-scratch", ""},
		{"oci:" + filepath.Join(dir, "ltsc2022"), "10.0.20348.2582"},
	} {
		writeFile(t, filepath.Join(dir, "ctx", "Dockerfile"), `# escape=`+"`"+`
FROM --platform=linux/amd64 scratch AS files
COPY a /etc/app/
COPY Data /data/

FROM --platform=windows/amd64 `+base.from+`
COPY --from=files /etc/app/ C:\app\
COPY b/app.conf C:\app\app.conf
COPY Data C:\k\Data\
COPY data2 C:\k\data\
COPY --from=files /data C:\k\DATA\more\
COPY SAM C:\Windows\System32\config\SAM
COPY empty.txt emptydir C:\e\
ADD tree.tar C:\t\
`)
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "ctx", "Dockerfile"), "-o", "oci:"+out)
		checkWindowsLayout(t, out, base.osVersion)
	}
}

// Directories spelled in other cases in other layers, and links of every
// kind (to a file or a directory spelled in another case, through a chain,
// into the built-in base, dangling) give importable layers, each link
// typed as its target is.
func TestWindowsLinksAndCasesImportable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "x.txt"), "x")
	writeFile(t, filepath.Join(dir, "b", "y.txt"), "y")
	writeFile(t, filepath.Join(dir, "c", "Sub", "z.txt"), "z")
	writeFile(t, filepath.Join(dir, "d", "SUB", "w.txt"), "w")
	if err := os.MkdirAll(filepath.Join(dir, "l"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"tox": "../DATA/X.TXT", "todir": "../data", "chain": "tox", "cfg": `..\..\Windows\System32\config`, "dangling": "nowhere",
	} {
		if err := os.Symlink(target, filepath.Join(dir, "l", name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  a: {local: {path: ./a}, licenses: none}
  b: {local: {path: ./b}, licenses: none}
  c: {local: {path: ./c}, licenses: none}
  d: {local: {path: ./d}, licenses: none}
  l: {local: {path: ./l, links: keep}, licenses: none}
images:
  win:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
    files:
      - {artifact: a, dest: /k/Data/, layer: one}
      - {artifact: c, dest: /m/, layer: one}
      - {artifact: b, dest: /k/data/, layer: two}
      - {artifact: d, dest: /m/, layer: three}
      - {artifact: l, dest: /k/links/, layer: four}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayout(t, out, "")
	attrs := map[string]string{}
	walkImage(t, dfImage(t, out), func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeSymlink {
			attrs[strings.TrimPrefix(h.Name, "Files/k/links/")] = h.PAXRecords["MSWINDOWS.fileattr"]
		}
	})
	if want := "map[cfg:1040 chain:1056 dangling:1056 todir:1040 tox:1056]"; fmt.Sprint(attrs) != want {
		t.Errorf("link attributes %v, want %s", attrs, want)
	}
}
