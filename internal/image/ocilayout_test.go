package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
)

var (
	linuxAMD64 = platform.Platform{OS: "linux", Arch: "amd64"}
	linuxARM64 = platform.Platform{OS: "linux", Arch: "arm64"}
)

// testLayout writes OCI layouts by hand, blob by blob, so that tests can
// make them wrong in exactly one way.
type testLayout struct {
	t   *testing.T
	dir string
}

func newTestLayout(t *testing.T) *testLayout {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return &testLayout{t: t, dir: dir}
}

func sha256Hash(b []byte) v1.Hash {
	s := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(s[:])}
}

// blob stores b under its digest.
func (l *testLayout) blob(b []byte, mt types.MediaType) v1.Descriptor {
	return l.blobAs(sha256Hash(b), b, mt)
}

// blobAs stores b under the name h, whatever b hashes to.
func (l *testLayout) blobAs(h v1.Hash, b []byte, mt types.MediaType) v1.Descriptor {
	l.t.Helper()
	if err := os.WriteFile(l.path(h), b, 0o644); err != nil {
		l.t.Fatal(err)
	}
	return v1.Descriptor{MediaType: mt, Digest: h, Size: int64(len(b))}
}

func (l *testLayout) path(h v1.Hash) string {
	return filepath.Join(l.dir, "blobs", h.Algorithm, h.Hex)
}

func indexJSON(t *testing.T, ds ...v1.Descriptor) []byte {
	t.Helper()
	if ds == nil {
		ds = []v1.Descriptor{}
	}
	b, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: ds})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (l *testLayout) index(ds ...v1.Descriptor) v1.Descriptor {
	return l.blob(indexJSON(l.t, ds...), types.OCIImageIndex)
}

func (l *testLayout) root(ds ...v1.Descriptor) {
	l.t.Helper()
	if err := os.WriteFile(filepath.Join(l.dir, "index.json"), indexJSON(l.t, ds...), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// testImage is what image wrote: the descriptors of its blobs.
type testImage struct {
	manifest, config, layer v1.Descriptor
}

// image writes a one-layer image for p. The layer is 256 KiB of random
// bytes in a gzip tar, so it is read in several chunks; config and
// manifest carry a label and an annotation, a byte of which can be
// changed without making them invalid JSON.
func (l *testLayout) image(p platform.Platform) testImage {
	l.t.Helper()
	content := make([]byte, 256<<10)
	rand.New(rand.NewSource(int64(len(p.Arch)))).Read(content)
	files := []fixture.File{{Name: "data/" + p.Arch, Content: string(content)}}
	tarball := fixture.Tar(files)
	var img testImage
	img.layer = l.blob(fixture.TarGz(files), types.OCILayer)
	cfg, err := json.Marshal(v1.ConfigFile{
		OS: p.OS, Architecture: p.Arch, Variant: p.Variant,
		Config: v1.Config{Labels: map[string]string{"note": "aaaaaaaaaaaaaaaa"}},
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{sha256Hash(tarball)}},
	})
	if err != nil {
		l.t.Fatal(err)
	}
	img.config = l.blob(cfg, types.OCIConfigJSON)
	m, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Config: img.config, Layers: []v1.Descriptor{img.layer},
		Annotations: map[string]string{"note": "aaaaaaaaaaaaaaaa"},
	})
	if err != nil {
		l.t.Fatal(err)
	}
	img.manifest = l.blob(m, types.OCIManifestSchema1)
	img.manifest.Platform = &v1.Platform{OS: p.OS, Architecture: p.Arch, Variant: p.Variant}
	return img
}

// flip changes the byte at the first occurrence of marker in the blob
// named h (or at its middle if marker is empty), keeping its size and
// mtime, as silent damage would.
func (l *testLayout) flip(h v1.Hash, marker string) {
	l.t.Helper()
	flipFile(l.t, l.path(h), marker)
}

func flipFile(t *testing.T, path, marker string) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := len(b) / 2
	if marker != "" {
		if at = bytes.Index(b, []byte(marker)); at < 0 {
			t.Fatalf("%s has no %q", path, marker)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{b[at] ^ 0x01}, int64(at)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
}

func (l *testLayout) base(p platform.Platform) (v1.Image, error) {
	r := &Resolver{Dir: l.t.TempDir()}
	return r.Base(context.Background(), "oci:"+l.dir, p)
}

// readLayers reads every layer blob to its end, as an output would, and
// returns the first error and how many bytes were delivered before it.
func readLayers(img v1.Image) (int64, error) {
	ls, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return total, err
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

func TestLayoutBaseGoodBuilds(t *testing.T) {
	l := newTestLayout(t)
	amd, arm := l.image(linuxAMD64), l.image(linuxARM64)
	nested := l.index(amd.manifest, arm.manifest)
	nested.Annotations = map[string]string{"org.opencontainers.image.ref.name": "1.0"}
	l.root(nested)
	for _, p := range []platform.Platform{linuxAMD64, linuxARM64} {
		for _, ref := range []string{"oci:" + l.dir, "oci:" + l.dir + ":1.0"} {
			r := &Resolver{Dir: t.TempDir()}
			img, err := r.Base(context.Background(), ref, p)
			if err != nil {
				t.Fatalf("%s for %s: %v", ref, p, err)
			}
			if err := validate.Image(img); err != nil {
				t.Fatalf("%s for %s: %v", ref, p, err)
			}
			out, err := Assemble(img, nil, Config{Env: []string{"A=1"}}, time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			if err := validate.Image(out); err != nil {
				t.Fatalf("assembled on %s for %s: %v", ref, p, err)
			}
		}
	}
	img, err := l.base(linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d != amd.manifest.Digest {
		t.Fatalf("amd64 base is %s, want %s", d, amd.manifest.Digest)
	}
}

// A name the layout does not hold is refused with the names it does:
// the tag alone, as pallet and BuildKit write ref.name, is easy to get
// wrong as "hello:latest" or a full reference.
func TestLayoutBaseNameMissingSaysTheNames(t *testing.T) {
	l := newTestLayout(t)
	nested := l.index(l.image(linuxAMD64).manifest)
	nested.Annotations = map[string]string{"org.opencontainers.image.ref.name": "1.0"}
	l.root(nested)
	r := &Resolver{Dir: t.TempDir()}
	_, err := r.Base(context.Background(), "oci:"+l.dir+":hello:1.0", linuxAMD64)
	wantErr(t, err, `has no image named "hello:1.0" (it names "1.0")`)
}

// Indexes nested as deep as allowed still resolve.
func TestLayoutBaseNestedToTheLimit(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	d := img.manifest
	for range MaxIndexDepth {
		d = l.index(d)
	}
	l.root(d)
	got, err := l.base(linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Fatal(err)
	}
}

func TestLayoutBaseDamagedConfig(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	l.flip(img.config.Digest, "aaaa")
	_, err := l.base(linuxAMD64)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "config", img.config.Digest.String(), l.dir)
}

func TestLayoutBaseDamagedManifest(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	l.flip(img.manifest.Digest, "aaaa")
	_, err := l.base(linuxAMD64)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "manifest", img.manifest.Digest.String(), l.dir)
}

func TestLayoutBaseDamagedNestedIndex(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	idx := l.index(img.manifest)
	l.root(idx)
	l.flip(idx.Digest, "amd64")
	_, err := l.base(linuxAMD64)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "index", idx.Digest.String(), l.dir)
}

// A layer is checked as it is streamed: the read that completes a damaged
// blob fails instead of delivering its last bytes.
func TestLayoutBaseDamagedLayer(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	l.flip(img.layer.Digest, "")
	base, err := l.base(linuxAMD64)
	if err != nil {
		t.Fatal(err) // nothing but the layer is wrong, and it is not read yet
	}
	n, err := readLayers(base)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "layer", img.layer.Digest.String(), l.dir)
	if n >= img.layer.Size {
		t.Fatalf("%d bytes of the damaged %d-byte layer were delivered", n, img.layer.Size)
	}
	if err := validate.Image(base); err == nil {
		t.Fatal("validate passes an image with a damaged layer")
	}
}

func TestLayoutBaseTruncatedLayer(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	if err := os.Truncate(l.path(img.layer.Digest), img.layer.Size-100); err != nil {
		t.Fatal(err)
	}
	base, err := l.base(linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	n, err := readLayers(base)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "layer", img.layer.Digest.String(), fmt.Sprint(img.layer.Size))
	if n != 0 {
		t.Fatalf("%d bytes of a truncated layer were delivered; its size is known before reading", n)
	}
}

func TestLayoutBaseLongerLayer(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	f, err := os.OpenFile(l.path(img.layer.Digest), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("trailing"))
	f.Close()
	base, err := l.base(linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readLayers(base); !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
}

func TestLayoutBaseTruncatedManifest(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	if err := os.Truncate(l.path(img.manifest.Digest), img.manifest.Size/2); err != nil {
		t.Fatal(err)
	}
	_, err := l.base(linuxAMD64)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "manifest", img.manifest.Digest.String())
}

func TestLayoutBaseMissingBlob(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(l.index(img.manifest))
	if err := os.Remove(l.path(img.manifest.Digest)); err != nil {
		t.Fatal(err)
	}
	_, err := l.base(linuxAMD64)
	wantErr(t, err, "manifest", img.manifest.Digest.String(), l.dir, "is missing")
}

// limitStack makes runaway recursion end quickly in a small stack
// instead of growing towards the default gigabyte.
func limitStack(t *testing.T) {
	old := debug.SetMaxStack(16 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
}

// sized returns body(size) where size is its own length: a descriptor can
// give the right size of a blob that names it.
func sized(body func(size int64) []byte) []byte {
	size := int64(0)
	for {
		b := body(size)
		if int64(len(b)) == size {
			return b
		}
		size = int64(len(b))
	}
}

func indexNaming(t *testing.T, h v1.Hash) func(int64) []byte {
	return func(size int64) []byte {
		return indexJSON(t, v1.Descriptor{MediaType: types.OCIImageIndex, Digest: h, Size: size})
	}
}

// An index that lists itself: only possible if the blob under its name is
// not what the name says, which is what stops the walk.
func TestLayoutBaseIndexListsItself(t *testing.T) {
	limitStack(t)
	l := newTestLayout(t)
	self := sha256Hash([]byte("a name this index gives itself"))
	l.root(l.blobAs(self, sized(indexNaming(t, self)), types.OCIImageIndex))
	_, err := l.base(linuxAMD64)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "index", self.String(), l.dir, "hashes to")
}

// Two indexes that list each other.
func TestLayoutBaseIndexLoop(t *testing.T) {
	limitStack(t)
	l := newTestLayout(t)
	a := sha256Hash([]byte("index a"))
	b := sha256Hash([]byte("index b"))
	da := l.blobAs(a, sized(indexNaming(t, b)), types.OCIImageIndex)
	l.blobAs(b, sized(indexNaming(t, a)), types.OCIImageIndex)
	l.root(da)
	_, err := l.base(linuxAMD64)
	if !errors.Is(err, ErrBlobMismatch) {
		t.Fatalf("got %v, want %v", err, ErrBlobMismatch)
	}
	wantErr(t, err, "index", a.String(), l.dir, "hashes to")
}

// A chain of distinct, correct indexes deeper than the limit.
func TestLayoutBaseNestedTooDeep(t *testing.T) {
	limitStack(t)
	l := newTestLayout(t)
	d := l.image(linuxAMD64).manifest
	for range 50 {
		d = l.index(d)
	}
	l.root(d)
	_, err := l.base(linuxAMD64)
	wantErr(t, err, "nested", fmt.Sprintf("more than the %d allowed", MaxIndexDepth), l.dir)
}

// An index naming the same child several times is searched once: 8
// levels of 4 references each would otherwise be 4^7 walks, and a layout
// of a few kilobytes could make the walk take forever.
func TestLayoutBaseSharedChildrenSearchedOnce(t *testing.T) {
	l := newTestLayout(t)
	d := l.index(l.image(linuxAMD64).manifest)
	for range MaxIndexDepth - 1 {
		d = l.index(d, d, d, d)
	}
	l.root(d)
	lr, err := openLayout(l.dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := lr.find("", linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || len(lr.searched) != MaxIndexDepth {
		t.Fatalf("found %d images searching %d indexes; want 1 image, %d indexes", len(imgs), len(lr.searched), MaxIndexDepth)
	}
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A manifest whose descriptor gives a size over the limit is refused
// before it is read; so is one whose file is larger than its descriptor.
func TestLayoutBaseManifestOverLimit(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	// A sparse 64 MiB "manifest": nothing of it may be read.
	huge := sha256Hash([]byte("huge"))
	if err := os.WriteFile(l.path(huge), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(l.path(huge), 64<<20); err != nil {
		t.Fatal(err)
	}
	l.root(v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: huge, Size: 64 << 20})
	var err error
	if n := allocated(func() { _, err = l.base(linuxAMD64) }); n > 2<<20 {
		t.Fatalf("refusing a 64 MiB manifest allocated %d bytes", n)
	}
	wantErr(t, err, "manifest", huge.String(), "over the 4194304-byte limit")

	// The limit is the resolver's to set.
	l.root(img.manifest)
	r := &Resolver{MaxManifestSize: img.manifest.Size - 1}
	_, err = r.Base(context.Background(), "oci:"+l.dir, linuxAMD64)
	wantErr(t, err, "manifest", img.manifest.Digest.String(), fmt.Sprintf("over the %d-byte limit", img.manifest.Size-1))
}

func TestLayoutBaseIndexJSONOverLimit(t *testing.T) {
	l := newTestLayout(t)
	l.root()
	if err := os.Truncate(filepath.Join(l.dir, "index.json"), 64<<20); err != nil {
		t.Fatal(err)
	}
	var err error
	if n := allocated(func() { _, err = l.base(linuxAMD64) }); n > 2<<20 {
		t.Fatalf("refusing a 64 MiB index.json allocated %d bytes", n)
	}
	wantErr(t, err, "index.json", "over the 4194304-byte limit", l.dir)
}

// A blob that is a named pipe is refused at once (go-containerregistry's
// layout checks before it opens): opened, it would wait for a writer, and
// no signal ends a blocked open.
func TestLayoutBaseLayerIsAPipe(t *testing.T) {
	l := newTestLayout(t)
	img := l.image(linuxAMD64)
	l.root(img.manifest)
	p := l.path(img.layer.Digest)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	base, err := l.base(linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readLayers(base)
		done <- err
	}()
	select {
	case err := <-done:
		wantErr(t, err, "layer", img.layer.Digest.String(), "not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("reading a base whose layer is a named pipe blocked")
	}
}

// A base is held to MaxLayers before its layers are looked at: one of
// 20,000 layers (a 3 MB manifest) ran for minutes in go-containerregistry's
// appended image. One of MaxLayers is taken.
func TestLayoutBaseLayerCount(t *testing.T) {
	for _, n := range []int{MaxLayers, 20000} {
		l := newTestLayout(t)
		files := []fixture.File{{Name: "f", Content: "x"}}
		layer := l.blob(fixture.TarGz(files), types.OCILayer)
		if n > MaxLayers {
			// A layer not in the layout: one read, or looked for, before
			// the count is fails the base for that instead. (Not a time
			// limit, which the race detector on a loaded machine passed
			// in 22 s: it parses the 3 MB manifest slowly.)
			if err := os.Remove(l.path(layer.Digest)); err != nil {
				t.Fatal(err)
			}
		}
		layers := make([]v1.Descriptor, n)
		diffIDs := make([]v1.Hash, n)
		for i := range layers {
			layers[i], diffIDs[i] = layer, sha256Hash(fixture.Tar(files))
		}
		cfg, err := json.Marshal(v1.ConfigFile{OS: "linux", Architecture: "amd64", RootFS: v1.RootFS{Type: "layers", DiffIDs: diffIDs}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: l.blob(cfg, types.OCIConfigJSON), Layers: layers})
		if err != nil {
			t.Fatal(err)
		}
		l.root(l.blob(m, types.OCIManifestSchema1))
		img, err := l.base(linuxAMD64)
		if n <= MaxLayers {
			if err != nil {
				t.Fatalf("%d layers: %v", n, err)
			}
			if ls, err := img.Layers(); err != nil || len(ls) != n {
				t.Fatalf("%d layers read, want %d: %v", len(ls), n, err)
			}
			continue
		}
		wantErr(t, err, "lists 20000 layers", "at most 500")
	}
}

// configImage writes an image of no layers whose config is cf, and
// returns its manifest's descriptor, naming no platform.
func (l *testLayout) configImage(cf v1.ConfigFile) v1.Descriptor {
	l.t.Helper()
	cf.RootFS = v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{}}
	cfg, err := json.Marshal(cf)
	if err != nil {
		l.t.Fatal(err)
	}
	d, _ := l.rawConfigImage(cfg)
	return d
}

// rawConfigImage is the manifest of an image of no layers whose config
// is raw, whatever it holds, and the config's descriptor.
func (l *testLayout) rawConfigImage(raw []byte) (manifest, config v1.Descriptor) {
	l.t.Helper()
	config = l.blob(raw, types.OCIConfigJSON)
	m, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: config, Layers: []v1.Descriptor{}})
	if err != nil {
		l.t.Fatal(err)
	}
	return l.blob(m, types.OCIManifestSchema1), config
}

// A layout with nothing for the platform asked says what it holds: an
// index of attestations (unknown/unknown, as BuildKit writes them), a
// Docker schema 1 manifest, which go-containerregistry reads as neither
// image nor index, a config that names no os. Each was "has no image for
// linux/amd64", which left the user to guess.
func TestLayoutBaseSaysWhatItHolds(t *testing.T) {
	attestation := func(l *testLayout, of v1.Descriptor) v1.Descriptor {
		d := l.configImage(v1.ConfigFile{})
		d.Platform = &v1.Platform{OS: "unknown", Architecture: "unknown"}
		d.Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": of.Digest.String()}
		return d
	}
	for _, c := range []struct {
		name string
		make func(l *testLayout) []v1.Descriptor
		want string
	}{
		{"another platform and its attestation", func(l *testLayout) []v1.Descriptor {
			img := l.image(linuxARM64).manifest
			return []v1.Descriptor{l.index(img, attestation(l, img))}
		}, "has no image for linux/amd64 (it holds linux/arm64; unknown/unknown)"},
		{"attestations alone", func(l *testLayout) []v1.Descriptor {
			return []v1.Descriptor{attestation(l, l.image(linuxAMD64).manifest)}
		}, "has no image for linux/amd64 (it holds unknown/unknown)"},
		{"schema 1", func(l *testLayout) []v1.Descriptor {
			return []v1.Descriptor{l.blob([]byte(`{"schemaVersion":1,"name":"x","tag":"y","architecture":"amd64","fsLayers":[],"history":[]}`), types.DockerManifestSchema1Signed)}
		}, "a Docker schema 1 manifest (application/vnd.docker.distribution.manifest.v1+prettyjws), which pallet does not read"},
		{"a config without os", func(l *testLayout) []v1.Descriptor {
			return []v1.Descriptor{l.configImage(v1.ConfigFile{Architecture: "amd64"})}
		}, "has no image for linux/amd64 (it holds (no os)/amd64 (by its config))"},
		{"a config without os, an entry that names one", func(l *testLayout) []v1.Descriptor {
			d := l.configImage(v1.ConfigFile{Architecture: "amd64"})
			d.Platform = &v1.Platform{OS: "linux", Architecture: "amd64"}
			return []v1.Descriptor{d}
		}, "is (no os)/amd64 by its config, not linux/amd64"},
		{"no image at all", func(l *testLayout) []v1.Descriptor {
			return []v1.Descriptor{l.blob([]byte("{}"), "application/vnd.example.thing")}
		}, `of media type "application/vnd.example.thing", not an image)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLayout(t)
			l.root(c.make(l)...)
			_, err := l.base(linuxAMD64)
			wantErr(t, err, c.want)
		})
	}
}

// A config that is no JSON is named by its digest: the error was the
// decoder's alone ("config: invalid character 'h' in literal true").
func TestLayoutBaseConfigNotJSON(t *testing.T) {
	l := newTestLayout(t)
	d, cfg := l.rawConfigImage([]byte("this is not json"))
	d.Platform = &v1.Platform{OS: "linux", Architecture: "amd64"}
	l.root(d)
	_, err := l.base(linuxAMD64)
	wantErr(t, err, "config "+cfg.Digest.String()+": invalid character")
}

// A base config under the bound that go-containerregistry writes again
// past it (history entries without a date are given one) is refused where
// the base is read, naming the base, not once assembled on.
func TestLayoutBaseConfigGrowsPastTheBound(t *testing.T) {
	l := newTestLayout(t)
	entries := 400_000
	raw := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"history":[{}` + strings.Repeat(`,{}`, entries-1) + `]}`)
	if len(raw) > DefaultMaxManifestSize {
		t.Fatalf("the config is %d bytes, over the bound it must pass when read", len(raw))
	}
	d, cfg := l.rawConfigImage(raw)
	d.Platform = &v1.Platform{OS: "linux", Architecture: "amd64"}
	l.root(d)
	_, err := l.base(linuxAMD64)
	wantErr(t, err, "config "+cfg.Digest.String(), fmt.Sprintf("(%d of its %d history entries have no date", entries, entries), fmt.Sprintf("over the %d", DefaultMaxManifestSize))
}
