package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// hardLinkedRootfs is a tar as a Debian rootfs holds hard links: perl
// and perl5.36.0 one file, uncompress and gunzip another, named by
// uncompress first, so that the layer's order (gunzip first) is not
// the archive's; zcat is linked to it and then replaced by a file of
// its own, which takes it out of the group.
func hardLinkedRootfs(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		h       tar.Header
		content string
	}{
		{tar.Header{Name: "usr/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{tar.Header{Name: "usr/bin/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{tar.Header{Name: "usr/bin/perl", Typeflag: tar.TypeReg, Mode: 0o755}, "perl\n"},
		{tar.Header{Name: "usr/bin/perl5.36.0", Typeflag: tar.TypeLink, Linkname: "usr/bin/perl", Mode: 0o755}, ""},
		{tar.Header{Name: "usr/bin/uncompress", Typeflag: tar.TypeReg, Mode: 0o755}, "gzip\n"},
		{tar.Header{Name: "usr/bin/gunzip", Typeflag: tar.TypeLink, Linkname: "usr/bin/uncompress", Mode: 0o755}, ""},
		{tar.Header{Name: "usr/bin/zcat", Typeflag: tar.TypeLink, Linkname: "usr/bin/uncompress", Mode: 0o755}, ""},
		{tar.Header{Name: "usr/bin/zcat", Typeflag: tar.TypeReg, Mode: 0o755}, "zcat\n"},
	} {
		f.h.Size = int64(len(f.content))
		if err := tw.WriteHeader(&f.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rootfs.tar"), buf.String())
	return dir
}

// hardLinkLines are the lines layerLines gives of hardLinkedRootfs
// placed at /, layer n: what BuildKit v0.29's layer holds, the later
// names of one file hard links to the first in the layer's order.
func hardLinkLines(n int, mode string) []string {
	return []string{
		fmt.Sprintf("%d usr dir", n),
		fmt.Sprintf("%d usr/bin dir", n),
		fmt.Sprintf("%d usr/bin/gunzip file %s 5", n, mode),
		fmt.Sprintf("%d usr/bin/perl file %s 5", n, mode),
		fmt.Sprintf("%d usr/bin/perl5.36.0 link to usr/bin/perl %s", n, mode),
		fmt.Sprintf("%d usr/bin/uncompress link to usr/bin/gunzip %s", n, mode),
		fmt.Sprintf("%d usr/bin/zcat file %s 5", n, mode),
	}
}

func hardLinkLine(h *tar.Header) string {
	switch h.Typeflag {
	case tar.TypeDir:
		return "dir"
	case tar.TypeLink:
		return fmt.Sprintf("link to %s %o", h.Linkname, h.Mode)
	}
	return fmt.Sprintf("file %o %d", h.Mode, h.Size)
}

// An ADD of a rootfs holding hard links writes them as BuildKit's layer
// does, whether the archive is unpacked or its unpacking read from the
// cache; the cache entry keeps which names are one file beside it,
// covered by its digest: an entry whose list is gone or changed is made
// again, not read as one of copies. umoci, an outside reader, unpacks the
// names of one file as one inode.
func TestDockerfileAddHardLinks(t *testing.T) {
	dir := hardLinkedRootfs(t)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD rootfs.tar /\n")
	out := filepath.Join(t.TempDir(), "o")
	digest := mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "--platform", "linux/amd64", "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		if err := validate.Layer(l); err != nil {
			t.Errorf("validate.Layer: %v", err)
		}
	}
	if got, want := layerLines(t, layers, 1, hardLinkLine), hardLinkLines(1, "755"); !reflect.DeepEqual(got, want) {
		t.Errorf("layer holds\n got %q\nwant %q", got, want)
	}

	cache := filepath.Join(dir, "cache")
	for _, run := range []string{"cold", "cached", "list changed", "list broken", "list gone"} {
		lists, err := filepath.Glob(filepath.Join(cache, "artifacts", "*", "linked"))
		if err != nil {
			t.Fatal(err)
		}
		if run != "cold" && len(lists) == 0 {
			t.Fatalf("%s: no cache entry keeps the hard-linked files", run)
		}
		for _, l := range lists {
			switch run {
			case "list changed":
				// Each name its own group: copies, were it read.
				writeFile(t, l, "usr/bin/gunzip\x001\x00usr/bin/perl\x002\x00usr/bin/perl5.36.0\x003\x00usr/bin/uncompress\x004\x00")
			case "list broken":
				// A group of a name the entry does not hold.
				writeFile(t, l, "usr/bin/gunzip\x001\x00usr/bin/nothing\x001\x00")
			case "list gone":
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := mustPallet(t, "build", "-q", "--cache-dir", cache, "-f", filepath.Join(dir, "Dockerfile"), "--platform", "linux/amd64", "-o", "oci:"+filepath.Join(t.TempDir(), "o")); got != digest {
			t.Errorf("%s: build with a cache gave %s, without %s", run, got, digest)
		}
	}

	// A copy of the cache holds each name as a file of its own, with
	// inodes of its own: the layer is the same, from the entry's list.
	copied := filepath.Join(t.TempDir(), "cache")
	if err := os.CopyFS(copied, os.DirFS(cache)); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"perl", "perl5.36.0"} {
		names, err := filepath.Glob(filepath.Join(copied, "artifacts", "*", "tree", "usr", "bin", l))
		if err != nil || len(names) != 1 {
			t.Fatalf("the cache entry's %s: %q, %v", l, names, err)
		}
		if info, err := os.Stat(names[0]); err != nil || info.Sys().(*syscall.Stat_t).Nlink != 1 {
			t.Fatalf("the copied cache's %s is linked: %v", names[0], err)
		}
	}
	if got := mustPallet(t, "build", "-q", "--cache-dir", copied, "-f", filepath.Join(dir, "Dockerfile"), "--platform", "linux/amd64", "-o", "oci:"+filepath.Join(t.TempDir(), "o")); got != digest {
		t.Errorf("build with a copy of the cache gave %s, without a cache %s", got, digest)
	}

	umoci := needTool(t, "umoci")
	bundle := filepath.Join(t.TempDir(), "bundle")
	args := []string{"unpack", "--image", out + ":latest", bundle}
	if os.Geteuid() != 0 {
		args = append(args[:1], append([]string{"--rootless"}, args[1:]...)...)
	}
	if b, err := exec.Command(umoci, args...).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, b)
	}
	stat := func(name string) os.FileInfo {
		info, err := os.Stat(filepath.Join(bundle, "rootfs", "usr", "bin", name))
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	for _, pair := range [][2]string{{"perl", "perl5.36.0"}, {"gunzip", "uncompress"}} {
		if !os.SameFile(stat(pair[0]), stat(pair[1])) {
			t.Errorf("umoci unpacked %s and %s as two files", pair[0], pair[1])
		}
	}
	if os.SameFile(stat("zcat"), stat("gunzip")) {
		t.Error("umoci unpacked zcat, replaced in the archive, as gunzip's file")
	}
	if b, err := os.ReadFile(filepath.Join(bundle, "rootfs", "usr", "bin", "zcat")); err != nil || string(b) != "zcat\n" {
		t.Errorf("zcat holds %q, %v", b, err)
	}
}

// A recipe's extract writes the hard links so too; a placement that
// takes some of the names (path:) links those it places to each other,
// and a name placed alone (renamed) is a file of its own.
func TestRecipeExtractHardLinks(t *testing.T) {
	dir := hardLinkedRootfs(t)
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  r:
    local: {path: ./rootfs.tar, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: r, dest: /, layer: root}
      - {artifact: r, path: usr/bin, dest: /opt/, layer: opt}
      - {artifact: r, path: usr/bin/perl5.36.0, dest: /sbin/perl, layer: opt}
`)
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		if err := validate.Layer(l); err != nil {
			t.Errorf("validate.Layer: %v", err)
		}
	}
	want := hardLinkLines(1, "755")
	want = append(want,
		"2 opt dir",
		"2 opt/gunzip file 755 5",
		"2 opt/perl file 755 5",
		"2 opt/perl5.36.0 link to opt/perl 755",
		"2 opt/uncompress link to opt/gunzip 755",
		"2 opt/zcat file 755 5",
		"2 sbin dir",
		"2 sbin/perl file 755 5",
	)
	if got := layerLines(t, layers, 1, hardLinkLine); !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
}

// A Windows layer holds each name of an archive's hard-linked file as a
// copy of its own, which the independent checker reads as the importer
// would.
func TestDockerfileAddHardLinksWindows(t *testing.T) {
	dir := hardLinkedRootfs(t)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM windows-hostprocess-scratch\nADD rootfs.tar /\n")
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "--platform", "windows/amd64", "-o", "oci:"+out)
	checkWindowsLayout(t, out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	walkLayer(t, layers[len(layers)-1], func(h *tar.Header, r io.Reader) {
		if h.Typeflag == tar.TypeLink {
			t.Errorf("%s is a hard link", h.Name)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			got[h.Name] = string(b)
		}
	})
	want := map[string]string{
		"Files/usr/bin/gunzip": "gzip\n", "Files/usr/bin/uncompress": "gzip\n", "Files/usr/bin/zcat": "zcat\n",
		"Files/usr/bin/perl": "perl\n", "Files/usr/bin/perl5.36.0": "perl\n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files\n got %q\nwant %q", got, want)
	}
}

// A COPY --from of what a stage unpacked links the names of one file
// it copies, as BuildKit's copy does (fsutil's copier links each file
// whose inode it copied already to the first name it copied it as).
func TestDockerfileCopyFromHardLinks(t *testing.T) {
	dir := hardLinkedRootfs(t)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nADD rootfs.tar /\nFROM scratch\nCOPY --from=s / /b/\n")
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "--platform", "linux/amd64", "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 b dir"}
	for _, l := range hardLinkLines(1, "755") {
		want = append(want, strings.ReplaceAll(strings.Replace(l, "1 ", "1 b/", 1), "to usr/", "to b/usr/"))
	}
	if got := layerLines(t, layers, 1, hardLinkLine); !reflect.DeepEqual(got, want) {
		t.Errorf("layer holds\n got %q\nwant %q", got, want)
	}
}

// An ADD of an archive with --chmod and --chown keeps its hard links, as
// BuildKit's unpack does: --chmod does not reach what an archive unpacks
// (BuildKit's copy hands its unpack the owner, not the mode), and
// --chown gives every name of a file one owner, so names whose headers
// differed only in owner (z here, 6:6) are one file again, where without
// it they are files of their own (BuildKit: one, owned as the last
// header says).
func TestDockerfileAddHardLinksChmodChown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.tar"), string(fixture.Tar([]fixture.File{
		{Name: "x", Content: "x", Mode: 0o644, UID: 5, GID: 5},
		{Name: "y", HardLink: "x", Mode: 0o644, UID: 5, GID: 5},
		{Name: "z", HardLink: "x", Mode: 0o644, UID: 6, GID: 6},
	})))
	writeFile(t, filepath.Join(dir, "Dockerfile"), `FROM scratch
ADD --chmod=700 a.tar /m/
ADD --chown=1000:1000 a.tar /o/
ADD --chmod=u+x,g-r --chown=1000:1000 a.tar /b/
`)
	line := func(h *tar.Header) string {
		what := "file"
		switch h.Typeflag {
		case tar.TypeDir:
			what = "dir"
		case tar.TypeLink:
			what = "link to " + h.Linkname
		}
		return fmt.Sprintf("%s %o %d:%d", what, h.Mode, h.Uid, h.Gid)
	}
	want := []string{
		"1 m dir 755 0:0", "1 m/x file 644 5:5", "1 m/y link to m/x 644 5:5", "1 m/z file 644 6:6",
		"2 o dir 755 1000:1000", "2 o/x file 644 1000:1000", "2 o/y link to o/x 644 1000:1000", "2 o/z link to o/x 644 1000:1000",
		"3 b dir 755 1000:1000", "3 b/x file 644 1000:1000", "3 b/y link to b/x 644 1000:1000", "3 b/z link to b/x 644 1000:1000",
	}
	if got := layerLines(t, dfLayers(t, dir), 1, line); !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
}
