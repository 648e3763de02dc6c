package main

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// windowsBaseOf writes at dir an OCI layout holding a Windows base of one
// plain tar layer, b, whose config has cmd when given.
func windowsBaseOf(t *testing.T, dir string, b []byte, cmd ...string) {
	t.Helper()
	windowsLayeredBase(t, dir, [][]byte{b}, cmd...)
}

// windowsLayeredBase is windowsBaseOf of several layers, blobs, in order;
// it returns their digests.
func windowsLayeredBase(t *testing.T, dir string, blobs [][]byte, cmd ...string) []v1.Hash {
	t.Helper()
	var layers []v1.Layer
	var digests []v1.Hash
	for _, b := range blobs {
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		layers, digests = append(layers, l), append(digests, d)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "windows", "amd64"
	if len(cmd) > 0 {
		cf.Config.Cmd = cmd
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	return digests
}

// linkedWindowsBase is a Windows base whose links Windows follows in the
// forms a base layer may write them: C:\ absolute, rooted at \, relative
// with '\', spelled in another case than what they lead to; and one
// leading to another drive, outside the image.
func linkedWindowsBase(t *testing.T, dir string) {
	t.Helper()
	d := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755} }
	// Directory links, as a base exported from Windows types them:
	// FILE_ATTRIBUTE_DIRECTORY|FILE_ATTRIBUTE_REPARSE_POINT.
	ln := func(n, to string) *tar.Header {
		return &tar.Header{Name: n, Typeflag: tar.TypeSymlink, Linkname: to, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "1040"}}
	}
	windowsBaseOf(t, dir, rawTar(t,
		d("Files/"), d("Files/Program Files/"), d("Files/Program Files/App/"), d("Files/Program Files/App/bin/"),
		d("Files/Windows/"), d("Files/Windows/System32/"),
		&tar.Header{Name: "Files/Program Files/App/readme.txt", Typeflag: tar.TypeReg, Size: 1},
		ln("Files/app", `C:\Program Files\App`),
		ln("Files/tools", `\program files\app\BIN`),
		ln("Files/rel", `Program Files\app`),
		ln("Files/chain", `rel\bin`),
		ln("Files/ext", `D:\data`),
		// A file link, typed as one (FILE_ATTRIBUTE_REPARSE_POINT).
		&tar.Header{Name: "Files/README", Typeflag: tar.TypeSymlink, Linkname: `program files\app\README.TXT`, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "1024"}},
	))
}

// A placement whose destination goes through a link of a Windows base
// lands where the link leads, as Windows (and Docker's COPY on Windows)
// follows it: the importer does not, and a layer directory at the
// link's path would replace the link, its files never reaching the
// target. A link that leaves the image is refused at the line.
func TestWindowsBaseLinksFollowed(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	writeFile(t, filepath.Join(dir, "d", "x"), "x\n")
	linkedWindowsBase(t, filepath.Join(dir, "base"))
	cases := []struct {
		name, df string
		want     []string
	}{
		{"an absolute C: link, into a directory below it", "COPY f.txt C:\\app\\bin\\\n", []string{"Files/Program Files/App/bin/f.txt"}},
		{"the same, spelled in another case", "COPY f.txt c:\\APP\\Bin\\\n", []string{"Files/Program Files/App/bin/f.txt"}},
		{"a rooted link, named without a trailing \\", "COPY f.txt C:\\tools\n", []string{"Files/Program Files/App/bin/f.txt"}},
		{"a relative link, a new name below it", "COPY f.txt C:\\rel\\new\\g.txt\n", []string{"Files/Program Files/App/new/g.txt"}},
		{"a chain of links", "COPY f.txt C:\\chain\\\n", []string{"Files/Program Files/App/bin/f.txt"}},
		{"a directory copied through a link", "COPY d C:\\app\\\n", []string{"Files/Program Files/App/x"}},
		{"a file copied at a file link writes the file it leads to", "COPY f.txt C:\\readme\n", []string{"Files/Program Files/App/readme.txt"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			df := filepath.Join(dir, "Dockerfile."+string(rune('a'+i)))
			writeFile(t, df, "# escape=`\nFROM --platform=windows/amd64 oci:base\n"+tc.df)
			for range 2 { // the second build reads the base's view from the cache
				out := filepath.Join(t.TempDir(), "out")
				mustPallet(t, "build", "-q", "-f", df, "-o", "oci:"+out)
				checkWindowsLayout(t, out, "")
				if got := layerNames(t, dfImage(t, out), 1); !slices.Equal(got, tc.want) {
					t.Errorf("layers hold\n %q\nwant\n %q", got, tc.want)
				}
			}
		})
	}
	// A recipe's placement goes through them too.
	recipe := func(dest string) string {
		return "version: 1\nartifacts:\n  f:\n    local: {path: f.txt}\n  d:\n    local: {path: d}\nimages:\n  app:\n    base: oci:base\n    platforms: [windows/amd64]\n    files:\n      - artifact: " + dest + "\n"
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), recipe("f\n        dest: /App/Bin/f.txt"))
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayout(t, out, "")
	if got := layerNames(t, dfImage(t, out), 1); !slices.Equal(got, []string{"Files/Program Files/App/bin/f.txt"}) {
		t.Errorf("recipe: layers hold %q", got)
	}
	// A placement through a link that meets the base where it leads is
	// refused at its own line, not the layer's first.
	writeFile(t, filepath.Join(dir, "clash", "bin"), "a file named as the base's directory\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), "version: 1\nartifacts:\n  f:\n    local: {path: f.txt}\n  c:\n    local: {path: clash}\nimages:\n  app:\n    base: oci:base\n    platforms: [windows/amd64]\n    files:\n      - {artifact: f, dest: /k/, layer: one}\n      - {artifact: c, dest: /app/, layer: one}\n")
	if _, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), "/Program Files/App/bin would be a file where the base") || !strings.Contains(err.Error(), "pallet.yaml:13") {
		t.Fatalf("want the file over the directory the link leads to refused at its line, got %v", err)
	}
	// A link to another drive cannot be followed: refused at its line.
	df := filepath.Join(dir, "Dockerfile.ext")
	writeFile(t, df, "# escape=`\nFROM --platform=windows/amd64 oci:base\nCOPY f.txt C:\\ext\\\n")
	if _, err := pallet(t, "build", "-q", "-f", df, "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), `/ext -> D:\data leads outside`) || !strings.Contains(err.Error(), "Dockerfile.ext:3") {
		t.Fatalf("want the link to D: refused at its line, got %v", err)
	}
	// A directory placed at / whose own directory meets a link would
	// replace the link on Windows: refused at its line.
	writeFile(t, filepath.Join(dir, "tree", "app", "y"), "y\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), "version: 1\nartifacts:\n  t:\n    local: {path: tree}\nimages:\n  app:\n    base: oci:base\n    platforms: [windows/amd64]\n    files:\n      - artifact: t\n        dest: /\n")
	if _, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), `holds the link /app -> C:\Program Files\App`) || !strings.Contains(err.Error(), "place it under /Program Files/App") || !strings.Contains(err.Error(), "pallet.yaml:10") {
		t.Fatalf("want the directory over the link refused at its line, got %v", err)
	}
}

// A link a layer places into a Windows base pallet reads is typed by what
// the base holds there, through the base's own links: a directory link
// to a directory, a file link to a file, with no warning. Typed as a
// file link, a link to a directory does not open on Windows.
func TestLinksIntoWindowsBaseAreTyped(t *testing.T) {
	dir := t.TempDir()
	linkedWindowsBase(t, filepath.Join(dir, "base"))
	if err := os.MkdirAll(filepath.Join(dir, "l"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"app": "../Program Files/App", "readme": "../program files/app/README.TXT", "via": "../tools"} {
		if err := os.Symlink(target, filepath.Join(dir, "l", name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  l: {local: {path: l, links: keep}, licenses: none}
images:
  app:
    base: oci:base
    platforms: windows/amd64
    files:
      - {artifact: l, dest: /links/}
`)
	out := filepath.Join(dir, "out")
	log := mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	if strings.Contains(log, "not in the image's layers") {
		t.Errorf("a link into the base was not typed:\n%s", log)
	}
	checkWindowsLayout(t, out, "")
	attrs := map[string]string{}
	walkImage(t, dfImage(t, out), func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeSymlink && strings.HasPrefix(h.Name, "Files/links/") {
			attrs[h.Name] = h.PAXRecords["MSWINDOWS.fileattr"]
		}
	})
	want := map[string]string{"Files/links/app": "1040", "Files/links/readme": "1056", "Files/links/via": "1040"}
	if !maps.Equal(attrs, want) {
		t.Errorf("link attributes %v, want %v", attrs, want)
	}
}

// A name a Windows layer cannot hold, unpacked from an archive, is said
// at the placement's line with the image path, and with the archive and
// the entry it came from: the archive is what its author must look into.
func TestUnplaceableArchiveEntryNamed(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ entry, extract, dest, want string }{
		// One file taken by path, placed under another name: its entry
		// is the one, whatever the name it is placed under.
		{"pkg/x.txt", "{}", "/k/nul.txt, path: pkg/x.txt", `: k/nul.txt: "nul.txt" is a reserved device name on Windows (artifact a: the archive ` + filepath.Join(dir, "a.tar.gz") + `, its entry pkg/x.txt)`},
		{"pkg/sub/aux.txt", "{}", "/k/", `: k/pkg/sub/aux.txt: "aux.txt" is a reserved device name on Windows (artifact a: the archive ` + filepath.Join(dir, "a.tar.gz") + `, its entry pkg/sub/aux.txt)`},
		{"pkg/notes.", "{strip: 1}", "/k/", `: k/notes.: "notes." ends with a dot or space, which Windows drops from file names (artifact a: the archive ` + filepath.Join(dir, "a.tar.gz") + `, its entry named notes. once extract.strip removed 1 leading component(s))`},
		{"pkg/a:b", "{strip: 1}", "/k/c", `: k/c/a:b: "a:b" contains ':', which Windows file names cannot (artifact a: the archive ` + filepath.Join(dir, "a.tar.gz") + `, its entry named a:b once extract.strip removed 1 leading component(s))`},
		{"pkg/sub/a:b", "{}", "/k/", `k/pkg/sub/a:b: "a:b" contains ':', which Windows file names cannot (artifact a: the archive ` + filepath.Join(dir, "a.tar.gz") + `, its entry pkg/sub/a:b)`},
	} {
		if err := os.WriteFile(filepath.Join(dir, "a.tar.gz"), fixture.TarGz([]fixture.File{{Name: "pkg/ok.txt", Content: "x"}, {Name: tc.entry, Content: "x"}}), 0o644); err != nil {
			t.Fatal(err)
		}
		recipe := filepath.Join(dir, "pallet.yaml")
		writeFile(t, recipe, "version: 1\nartifacts:\n  a:\n    local: {path: a.tar.gz, extract: "+tc.extract+"}\n    licenses: none\nimages:\n  img:\n    base: windows-hostprocess-scratch\n    platforms: [windows/amd64]\n    files:\n      - {artifact: a, dest: "+tc.dest+", layer: files}\n")
		_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		if err == nil || !strings.HasPrefix(err.Error(), recipe+":11:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want it at %s:11 with %q", tc.entry, err, recipe, tc.want)
		}
	}
}
