package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/tree"
)

// tarLayer is a layer of hdrs, each a directory ("d/"), a link ("l->t"),
// a hard link ("h=>t") or a file.
func tarLayer(t *testing.T, names ...string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		hdr := &tar.Header{Name: n, Mode: 0o644, Typeflag: tar.TypeReg}
		switch {
		case strings.Contains(n, "->"):
			hdr.Name, hdr.Linkname, _ = strings.Cut(n, "->")
			hdr.Typeflag = tar.TypeSymlink
		case strings.Contains(n, "=>"):
			hdr.Name, hdr.Linkname, _ = strings.Cut(n, "=>")
			hdr.Typeflag = tar.TypeLink
		case strings.HasSuffix(n, "/"):
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// What a base holds is its layers applied in order, as an importer does:
// later entries replace, whiteouts remove, entries under a link land where
// it leads. Links are kept that lead to a directory, or to nothing yet;
// directories with their mode and owner.
func TestBaseView(t *testing.T) {
	img := imageOf(t,
		tarLayer(t, "usr/", "usr/bin/", "usr/bin/sh", "usr/lib/", "usr/sbin/", "tmp/",
			"bin->usr/bin", "lib->/usr/lib", "sbin->usr/sbin", "lib64->usr/lib64", // lib64 leads nowhere yet
			"etc/", "etc/alt->/usr/bin/sh", // to a file
			"loop1->loop2", "loop2->loop1",
			"sysroot->/", "up->../../..",
			"run/", "var/", "var/run->../run", "old->usr/lib", "deep->usr/bin/sh/x"),
		tarLayer(t, "sbin/", // a directory replaces a link
			"bin/extra/", "bin/extra/x", // written through the link
			"cur->usr/bin/extra",
			".wh.old"),
		tarLayer(t, "var/.wh..wh..opq", "var/tmp/"), // opaque: var/run goes
		// An opaque marker after entries of its own layer hides only
		// the layers below (found by helper-45).
		tarLayer(t, "srv/", "srv/data/", "srv/lib->/usr/lib", "srv/.wh..wh..opq"),
	)
	got, err := BaseView(img, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := tree.Links{"bin": "usr/bin", "lib": "/usr/lib", "cur": "usr/bin/extra", "lib64": "usr/lib64", "sysroot": "/", "up": "../../..", "srv/lib": "/usr/lib"}
	if !reflect.DeepEqual(got.Links, want) {
		t.Errorf("links %v\nwant  %v", got.Links, want)
	}
	var dirs []string
	for p := range got.Dirs {
		dirs = append(dirs, p)
	}
	slices.Sort(dirs)
	wantDirs := []string{"etc", "run", "sbin", "srv", "srv/data", "tmp", "usr", "usr/bin", "usr/bin/extra", "usr/lib", "usr/sbin", "var", "var/tmp"}
	if !slices.Equal(dirs, wantDirs) {
		t.Errorf("dirs %v\nwant %v", dirs, wantDirs)
	}
	var files []string
	for p := range got.Files {
		files = append(files, p)
	}
	slices.Sort(files)
	if want := []string{"usr/bin/extra/x", "usr/bin/sh"}; !slices.Equal(files, want) {
		t.Errorf("files %v\nwant %v", files, want)
	}
	if m := got.Dirs["tmp"]; m.Mode != 0o755 {
		t.Errorf("tmp: %+v", m)
	}
	k1, err := ViewKey(img)
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := ViewKey(imageOf(t, tarLayer(t, "bin->usr/bin"))); k1 == k2 {
		t.Error("two bases with different layers share a key")
	}
}

// A hostile base cannot make reading it cost more than its size: each
// whiteout and each replaced directory removes its own subtree only (the
// first version looked at every path for each: 20,000 whiteouts over
// 200,000 directories took 53 s), and the uncompressed bytes are bounded.
func TestBaseViewBounded(t *testing.T) {
	var dirs, whiteouts []string
	for i := range 20_000 {
		dirs = append(dirs, fmt.Sprintf("f/d%d/", i))
	}
	for i := range 5_000 {
		whiteouts = append(whiteouts, fmt.Sprintf("f/.wh.n%d", i), fmt.Sprintf("f/.wh.d%d", i))
	}
	layers := []v1.Layer{tarLayer(t, dirs...), tarLayer(t, whiteouts...)}
	b := newBaseFS()
	for _, l := range layers {
		d, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.apply(l, d, 1<<30, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.nodes) != 1+1+15_000 { // the root, f, and the directories left
		t.Errorf("%d paths left", len(b.nodes))
	}
	if b.visits > 2*len(whiteouts) {
		t.Errorf("%d whiteouts looked at %d paths", len(whiteouts), b.visits)
	}
	img := imageOf(t, layers...)
	if _, err := BaseView(img, 4096, 0); err == nil || !strings.Contains(err.Error(), "more than 4096 bytes uncompressed") {
		t.Errorf("over the limit: %v", err)
	}
}

// wrongDiffIDs is an image whose config names other content than its
// layers hold.
type wrongDiffIDs struct{ v1.Image }

func (w wrongDiffIDs) ConfigFile() (*v1.ConfigFile, error) {
	cf, err := w.Image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}
	return cf, nil
}

func TestBaseViewChecksDiffIDs(t *testing.T) {
	img := wrongDiffIDs{imageOf(t, tarLayer(t, "usr/bin/", "bin->usr/bin"))}
	_, err := BaseView(img, 1<<30, 0)
	if err == nil || !strings.Contains(err.Error(), "not the diffID sha256:0000") {
		t.Errorf("err = %v", err)
	}
}

// rawLayer is a layer whose blob is blob, labelled mt.
type rawLayer struct {
	blob []byte
	mt   types.MediaType
}

func (r rawLayer) Digest() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(r.blob))
	return h, err
}
func (r rawLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(r.blob)), nil
}
func (r rawLayer) Size() (int64, error)                { return int64(len(r.blob)), nil }
func (r rawLayer) MediaType() (types.MediaType, error) { return r.mt, nil }

// tarOf is a tar of one file of size bytes, from a reproducible source.
func tarOf(t *testing.T, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data) // incompressible: a frame's window must span it
	if err := tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(data)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func layerOf(t *testing.T, blob []byte, mt types.MediaType) v1.Layer {
	t.Helper()
	l, err := partial.CompressedToLayer(rawLayer{blob, mt})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A base layer labelled with a type no importer unpacks is refused at
// the build, not where the image is pulled.
func TestBaseViewRefusesUnknownLayerTypes(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tarOf(t, 10))
	zw.Close()
	img := imageOf(t, layerOf(t, gz.Bytes(), "application/vnd.example.weird"))
	_, err := BaseView(img, 1<<30, 0)
	if err == nil || !strings.Contains(err.Error(), `media type "application/vnd.example.weird" is not a layer's`) {
		t.Errorf("err = %v", err)
	}
	// The known types, whatever the compression their bytes have.
	for _, mt := range []types.MediaType{types.OCILayer, types.DockerLayer, types.OCIUncompressedLayer} {
		if _, err := BaseView(imageOf(t, layerOf(t, gz.Bytes(), mt)), 1<<30, 0); err != nil {
			t.Errorf("%s: %v", mt, err)
		}
	}
}

// A zstd base layer is held to the archive window limit: the
// go-containerregistry decoder alone lets a frame claim 512 MiB.
func TestBaseViewBoundsZstdWindow(t *testing.T) {
	var zs bytes.Buffer
	zw, err := zstd.NewWriter(&zs, zstd.WithWindowSize(1<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(tarOf(t, 1<<20))
	zw.Close()
	img := imageOf(t, layerOf(t, zs.Bytes(), types.OCILayerZStd))
	if _, err := BaseView(img, 1<<30, 64<<10); !errors.Is(err, archive.ErrLimit) || !strings.Contains(err.Error(), "window") {
		t.Errorf("err = %v", err)
	}
	if _, err := BaseView(img, 1<<30, 0); err != nil {
		t.Errorf("within the default window: %v", err)
	}
}

// A base layer's names and link targets are held to archive extraction's
// bounds before the view makes each parent: one name 20,000 directories
// deep took 9 s and 1.2 GB. Names at the bounds are read.
func TestBaseViewBoundsNames(t *testing.T) {
	deepest := strings.Repeat("d/", tree.MaxDepth-1) + "f"
	if _, err := BaseView(imageOf(t, tarLayer(t, deepest, strings.Repeat("n", tree.MaxPath), "l->"+strings.Repeat("t", tree.MaxPath))), 1<<30, 0); err != nil {
		t.Fatalf("names at the bounds: %v", err)
	}
	for _, name := range []string{"d/" + deepest, strings.Repeat("n", tree.MaxPath+1), strings.Repeat("a/", 20000) + "f", "l->" + strings.Repeat("t", 100_000)} {
		start := time.Now()
		_, err := BaseView(imageOf(t, tarLayer(t, name)), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), "base layer 1") || !strings.Contains(err.Error(), "4096") {
			t.Errorf("%.20s... (%d bytes): %v, want it refused", name, len(name), err)
		}
		if took := time.Since(start); took > time.Second*raceSlowdown {
			t.Errorf("%.20s...: took %s", name, took)
		}
	}
	// A Windows link holds up to what a reparse point does.
	win := func(target string) error {
		_, err := WindowsBaseView(imageOf(t, tarLayer(t, "Files/", "Files/l->"+target)), 1<<30, 0)
		return err
	}
	if err := win(strings.Repeat("t", 10_000)); err != nil {
		t.Errorf("a Windows link of 10,000 bytes: %v", err)
	}
	if err := win(strings.Repeat("t", 20_000)); err == nil || !strings.Contains(err.Error(), "reparse point") {
		t.Errorf("a Windows link of 20,000 bytes: %v, want it refused", err)
	}
}

// TestBaseViewBoundsLinkWork refuses a base whose links are made to loop
// through long targets: each of them costs megabytes to resolve (20,000
// took 14 s, a million would take minutes), where a legitimate base's
// links cost some hundred bytes each, as the libraries' links here do.
func TestBaseViewBoundsLinkWork(t *testing.T) {
	var names []string
	for i := range 5000 {
		names = append(names, fmt.Sprintf("usr/lib/libx%d.so.1", i), fmt.Sprintf("usr/lib/libx%d.so->libx%d.so.1", i, i))
	}
	libs := tarLayer(t, append([]string{"usr/", "usr/lib/", "lib->usr/lib"}, names...)...)
	v, err := BaseView(imageOf(t, libs), 1<<30, 0)
	if err != nil {
		t.Fatalf("a base of 5000 library links: %v", err)
	}
	if len(v.FileLinks) != 5000 {
		t.Errorf("%d links to files, want 5000", len(v.FileLinks))
	}

	// Links 200 directories deep, each to itself through 4 KiB of x/..,
	// each x looked up below the 200: 40 hops of 300 KB each.
	deep := strings.Repeat("d/", 200)
	loops := []string{}
	for i := range 200 {
		loops = append(loops, deep[:2*(i+1)])
	}
	pad := strings.Repeat("x/../", (4000-len(deep))/5)
	for i := range 20 {
		l := fmt.Sprintf("%sl%d", deep, i)
		loops = append(loops, l+"->/"+deep+pad+fmt.Sprintf("l%d", i))
	}
	layer := tarLayer(t, loops...)
	start := time.Now()
	_, err = BaseView(imageOf(t, libs, layer), 1<<30, 0)
	if err == nil || !errors.Is(err, tree.ErrLinkWork) || !strings.Contains(err.Error(), "base layer 2 (sha256:") {
		t.Errorf("links that loop through long targets: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("refused after %s", d)
	}
}

// A base layer's hard link must name what is there when it is unpacked:
// containerd, Docker and umoci each call link(2) on the target, and fail
// the pull of an image whose link names a path no earlier entry or lower
// layer holds, or a directory. Such a base is refused at the build.
func TestBaseViewRefusesHardLinksToNothing(t *testing.T) {
	lower := tarLayer(t, "usr/", "usr/bin/", "usr/bin/sh", "bin->usr/bin", "etc/", "etc/gone")
	for _, ok := range [][]string{
		{"usr/bin/sh2=>usr/bin/sh"},                     // a lower layer's file
		{"usr/bin/dash", "usr/bin/dash2=>usr/bin/dash"}, // an earlier entry's
		{"x=>/usr/bin/sh", "y=>./usr/bin/sh"},           // spelt absolute or from "."
		{"z=>bin/sh"},                                   // through the base's link
		{"w=>../../usr/bin/sh"},                         // climbing out: taken at the root
		{"s=>bin"},                                      // a symlink is linked itself
	} {
		if _, err := BaseView(imageOf(t, lower, tarLayer(t, ok...)), 1<<30, 0); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []struct {
		entries []string
		want    string
	}{
		{[]string{"a=>not/yet", "not/", "not/yet"}, `entry "a": a hard link to "not/yet", which no earlier entry or lower layer holds`},
		{[]string{"a=>nowhere"}, `a hard link to "nowhere", which no earlier entry`},
		{[]string{"etc/.wh.gone", "a=>etc/gone"}, `a hard link to "etc/gone", which no earlier entry`},
		{[]string{"a=>usr/bin"}, `a hard link to the directory "usr/bin"`},
		{[]string{"a=>/"}, "a hard link to the root directory"},
	} {
		_, err := BaseView(imageOf(t, lower, tarLayer(t, bad.entries...)), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "base layer 2 (sha256:") {
			t.Errorf("%q: err = %v, want %q", bad.entries, err, bad.want)
		}
	}
}

// A base layer whose bytes are no tar, or a tar cut short inside a
// header, is refused saying so; the tar reader's own error was a bare
// "unexpected EOF".
func TestBaseViewSaysALayerIsNoTar(t *testing.T) {
	whole := tarOf(t, 600)
	for _, c := range []struct {
		name string
		blob []byte
		want string
	}{
		{"text", []byte("not a tar at all, just text"), "not a tar, or one cut short: after 0 entries, unexpected EOF"},
		{"cut in the third header", append(unendedTar(t, "a", "b"), whole[:100]...), "not a tar, or one cut short: after 2 entries, unexpected EOF"},
	} {
		_, err := BaseView(imageOf(t, layerOf(t, c.blob, types.OCIUncompressedLayer)), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "base layer 1 (sha256:") {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// unendedTar is a tar of empty files, without its end blocks.
func unendedTar(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A whiteout of no name, of "." or of ".." hides nothing of its
// directory: containerd refuses the layer, umoci empties the directory or
// its parent. The view, which took ".." for the parent, refuses it too,
// naming the layer and the entry.
func TestBaseViewRefusesWhiteoutsOfDots(t *testing.T) {
	lower := tarLayer(t, "etc/", "etc/sub/", "etc/os-release")
	for _, name := range []string{"etc/sub/.wh...", "etc/sub/.wh..", "etc/.wh.", ".wh..."} {
		_, err := BaseView(imageOf(t, lower, tarLayer(t, name)), 1<<30, 0)
		if err == nil || !strings.Contains(err.Error(), "base layer 2 (sha256:") ||
			!strings.Contains(err.Error(), fmt.Sprintf("entry %q: a whiteout of %q, which names no entry of its directory: containerd refuses the layer", name, strings.TrimPrefix(path.Base(name), ".wh."))) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// A name that only starts with dots is one.
	if _, err := BaseView(imageOf(t, lower, tarLayer(t, "etc/.wh....x")), 1<<30, 0); err != nil {
		t.Errorf("whiteout of ...x: %v", err)
	}
}

// A base whose manifest and config count its layers differently says
// which says what; the error was "base has 1 layers and 2 diffIDs".
func TestBaseViewLayersAndDiffIDsDiffer(t *testing.T) {
	img := imageOf(t, tarLayer(t, "a"))
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs = append(cf.RootFS.DiffIDs, cf.RootFS.DiffIDs[0])
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	_, err = BaseView(img, 1<<30, 0)
	if want := "its manifest lists 1 layers and its config 2 diffIDs (rootfs.diff_ids)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
