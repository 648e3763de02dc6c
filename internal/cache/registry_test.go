package cache

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/testregistry"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// tamperer sits in front of the test registry as a hostile or broken one
// would: it serves manifests of its own under some paths and may rewrite
// blobs on their way out.
type tamperer struct {
	mu        sync.Mutex
	manifests map[string][]byte        // by request path
	blob      func(body []byte) []byte // rewrites every blob served
	// gets counts the GETs of each blob, by digest.
	gets map[string]int
	// drip, when set, serves every blob a byte at a time, drip apart.
	drip time.Duration
	// hang, when set, answers no blob GET until the client gives up.
	hang bool
	// slow, when set, answers the client library's ping (GET /v2/) and
	// every blob GET after slow.
	slow time.Duration
}

func (tp *tamperer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp.mu.Lock()
		m, fake := tp.manifests[r.URL.Path]
		rewrite, drip, hang, slow := tp.blob, tp.drip, tp.hang, tp.slow
		isBlob := strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet
		if isBlob {
			if tp.gets == nil {
				tp.gets = map[string]int{}
			}
			tp.gets[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
		}
		tp.mu.Unlock()
		if isBlob || r.Method == http.MethodGet && r.URL.Path == "/v2/" {
			time.Sleep(slow)
		}
		if isBlob && hang {
			<-r.Context().Done()
			return
		}
		if isBlob && drip > 0 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			w.Header().Set("Content-Length", fmt.Sprint(rec.Body.Len()))
			w.WriteHeader(rec.Code)
			for _, b := range rec.Body.Bytes() {
				if _, err := w.Write([]byte{b}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(drip)
			}
			return
		}
		if fake {
			w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
			w.Header().Set("Docker-Content-Digest", "sha256:"+sha(m))
			w.Header().Set("Content-Length", fmt.Sprint(len(m)))
			if r.Method != http.MethodHead {
				w.Write(m)
			}
			return
		}
		if rewrite == nil || !strings.Contains(r.URL.Path, "/blobs/sha256:") || r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rewrite(rec.Body.Bytes())
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

// fixture is a registry cache exported by one machine.
type fixture struct {
	reg        *testregistry.Registry
	tp         *tamperer
	ref        string
	art1, art2 string // artifact keys
	lay1, lay2 string // layer keys
	layers     map[string]LayerEntry
	manifest   v1.Manifest
}

func commitArtifact(t *testing.T, c *Cache, key string, files map[string]string) string {
	t.Helper()
	tmp, _, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		writeFile(t, filepath.Join(tmp, filepath.FromSlash(name)), []byte(content))
	}
	dir, err := c.CommitArtifact(key, tmp)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func artifactFiles(name, pin string) map[string]string {
	return map[string]string{
		"tree/bin/" + name: "binary " + name,
		"record.json":      fmt.Sprintf(`{"name":%q,"sha256":%q}`, name, pin),
		"digest":           "digest of " + name,
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tp := &tamperer{manifests: map[string][]byte{}}
	reg := testregistry.Start(t, tp.wrap)
	f := &fixture{reg: reg, tp: tp, ref: reg.Host + "/ci/cache:main",
		art1: Key("artifact", "one"), art2: Key("artifact", "two"),
		lay1: Key("layer", "one"), lay2: Key("layer", "two"), layers: map[string]LayerEntry{}}
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	commitArtifact(t, c, f.art1, artifactFiles("one", sha([]byte("one.tar.gz"))))
	commitArtifact(t, c, f.art2, artifactFiles("two", sha([]byte("two.tar.gz"))))
	f.layers[f.lay1], _ = putLayer(t, c, f.lay1, bytes.Repeat([]byte("first layer "), 50))
	f.layers[f.lay2], _ = putLayer(t, c, f.lay2, bytes.Repeat([]byte("second layer "), 50))
	if err := c.ExportTo(context.Background(), f.ref); err != nil {
		t.Fatalf("export: %v\n%s", err, log)
	}
	r, err := name.ParseReference(f.ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(desc.Manifest, &f.manifest); err != nil {
		t.Fatal(err)
	}
	if len(f.manifest.Layers) != 4 {
		t.Fatalf("the export has %d entries, want 4", len(f.manifest.Layers))
	}
	return f
}

// serve makes the registry answer for tag with m, and returns its ref.
func (f *fixture) serve(t *testing.T, tag string, m v1.Manifest) string {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	f.tp.mu.Lock()
	f.tp.manifests["/v2/ci/cache/manifests/"+tag] = data
	f.tp.mu.Unlock()
	return f.reg.Host + "/ci/cache:" + tag
}

// edited is a deep copy of the fixture's manifest with edit applied.
func (f *fixture) edited(t *testing.T, edit func(m *v1.Manifest)) v1.Manifest {
	t.Helper()
	data, _ := json.Marshal(f.manifest)
	var m v1.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	return m
}

func entry(m *v1.Manifest, ann, key string) *v1.Descriptor {
	for i := range m.Layers {
		if m.Layers[i].Annotations[ann] == key {
			return &m.Layers[i]
		}
	}
	return nil
}

// importing opens an empty cache importing from ref.
func importing(t *testing.T, ref string) (*Cache, *logLines) {
	t.Helper()
	c, log := openCache(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	if err := c.ImportFrom(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	return c, log
}

// entries lists what a cache holds: artifact entries, layer entries and
// blobs.
func entries(t *testing.T, c *Cache) []string {
	t.Helper()
	var out []string
	for _, sub := range []string{"artifacts", "layers", "blobs/sha256"} {
		des, err := os.ReadDir(filepath.Join(c.Dir(), sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range des {
			out = append(out, sub+"/"+d.Name())
		}
	}
	return out
}

// The round trip the checks must leave working: a fresh cache finds every
// entry another exported, with its content.
func TestRegistryCacheRoundTrip(t *testing.T) {
	f := newFixture(t)
	c, log := importing(t, f.ref)
	dir, ok := c.Artifact(f.art1)
	if !ok {
		t.Fatalf("artifact not imported; log:\n%s", log)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tree", "bin", "one")); err != nil || string(b) != "binary one" {
		t.Errorf("imported artifact holds %q (%v)", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "complete")); err != nil || string(b) != f.art1 {
		t.Errorf("imported artifact's marker holds %q (%v), want its key", b, err)
	}
	for _, key := range []string{f.lay1, f.lay2} {
		e, blob, ok := c.Layer(key)
		if !ok || e != f.layers[key] {
			t.Fatalf("layer %s imported as %+v %v, want %+v; log:\n%s", key, e, ok, f.layers[key], log)
		}
		if b, err := os.ReadFile(blob); err != nil || "sha256:"+sha(b) != e.Digest {
			t.Errorf("layer %s blob does not match its digest (%v)", key, err)
		}
	}
	if log.String() != "" {
		t.Errorf("warnings on a sound cache:\n%s", log)
	}
}

// A manifest that lies about an entry is a warning and a miss, and leaves
// nothing in the local cache.
func TestRegistryCacheTamperedManifest(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		edit   func(m *v1.Manifest)
		lookup func(c *Cache) bool
		warn   string
	}{
		{"diff ID lies", func(m *v1.Manifest) {
			entry(m, annLayer, f.lay1).Annotations[annDiffID] = f.layers[f.lay2].DiffID
		}, func(c *Cache) bool { _, _, ok := c.Layer(f.lay1); return ok }, "diff ID"},
		{"compression lies", func(m *v1.Manifest) {
			d := entry(m, annLayer, f.lay1)
			d.Annotations[annCompression], d.MediaType = "zstd", types.OCILayerZStd
		}, func(c *Cache) bool { _, _, ok := c.Layer(f.lay1); return ok }, "zstd"},
		{"media type disagrees with compression", func(m *v1.Manifest) {
			entry(m, annLayer, f.lay1).MediaType = types.OCILayerZStd
		}, func(c *Cache) bool { _, _, ok := c.Layer(f.lay1); return ok }, "media type"},
		{"unknown compression", func(m *v1.Manifest) {
			entry(m, annLayer, f.lay1).Annotations[annCompression] = "lz4"
		}, func(c *Cache) bool { _, _, ok := c.Layer(f.lay1); return ok }, "lz4"},
		{"size lies", func(m *v1.Manifest) {
			entry(m, annLayer, f.lay1).Size--
		}, func(c *Cache) bool { _, _, ok := c.Layer(f.lay1); return ok }, "bytes"},
		{"layer points at a blob that is not there", func(m *v1.Manifest) {
			entry(m, annLayer, f.lay1).Digest = v1.Hash{Algorithm: "sha256", Hex: sha([]byte("nothing"))}
		}, func(c *Cache) bool { _, _, ok := c.Layer(f.lay1); return ok }, "not used"},
		{"artifact keys swapped", func(m *v1.Manifest) {
			a, b := entry(m, annArtifact, f.art1), entry(m, annArtifact, f.art2)
			a.Annotations[annArtifact], b.Annotations[annArtifact] = f.art2, f.art1
		}, func(c *Cache) bool {
			_, ok1 := c.Artifact(f.art1)
			_, ok2 := c.Artifact(f.art2)
			return ok1 || ok2
		}, "exported for another key"},
		{"artifact key on a layer blob", func(m *v1.Manifest) {
			a, l := entry(m, annArtifact, f.art1), entry(m, annLayer, f.lay1)
			a.Digest, a.Size = l.Digest, l.Size
		}, func(c *Cache) bool { _, ok := c.Artifact(f.art1); return ok }, "not used"},
		{"artifact entry of another media type", func(m *v1.Manifest) {
			entry(m, annArtifact, f.art1).MediaType = types.OCILayer
		}, func(c *Cache) bool { _, ok := c.Artifact(f.art1); return ok }, "media type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := f.serve(t, strings.ReplaceAll(tc.name, " ", "-"), f.edited(t, tc.edit))
			c, log := importing(t, ref)
			if tc.lookup(c) {
				t.Fatalf("the tampered entry was taken; log:\n%s", log)
			}
			if !strings.Contains(log.String(), tc.warn) || !strings.Contains(log.String(), "shared cache") {
				t.Errorf("no warning naming %q; log:\n%s", tc.warn, log)
			}
			if got := entries(t, c); len(got) != 0 {
				t.Errorf("the local cache took %v", got)
			}
		})
	}
}

// Layer keys swapped in the manifest point at layers that are whole but
// another key's: only the request can tell, through LayerChecked.
func TestRegistryCacheLayerCheck(t *testing.T) {
	f := newFixture(t)
	ref := f.serve(t, "swapped", f.edited(t, func(m *v1.Manifest) {
		a, b := entry(m, annLayer, f.lay1), entry(m, annLayer, f.lay2)
		a.Annotations[annLayer], b.Annotations[annLayer] = f.lay2, f.lay1
	}))
	c, log := importing(t, ref)
	// What the build knows of the layer it wants: the diff ID of the tar
	// its tree makes.
	calls := 0
	check := func(key string) func(LayerEntry, string) error {
		return func(e LayerEntry, blob string) error {
			calls++
			if _, err := os.Stat(blob); err != nil {
				return err
			}
			if e.DiffID != f.layers[key].DiffID {
				return errors.New("not the layer of this tree")
			}
			return nil
		}
	}
	if _, _, ok := c.LayerChecked(f.lay1, check(f.lay1)); ok {
		t.Fatal("a layer the check refused was taken")
	}
	if calls != 1 {
		t.Errorf("the check ran %d times", calls)
	}
	if !strings.Contains(log.String(), "not the layer of this tree") {
		t.Errorf("the refusal was not reported; log:\n%s", log)
	}
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("the local cache took %v", got)
	}

	// The same check passes a sound entry.
	c, log = importing(t, f.ref)
	if e, _, ok := c.LayerChecked(f.lay1, check(f.lay1)); !ok || e != f.layers[f.lay1] {
		t.Errorf("the sound layer was refused: %+v; log:\n%s", e, log)
	}
}

// An artifact entry whose record claims other pins than the request's is
// refused by the caller's check before it enters the local cache.
func TestRegistryCacheArtifactCheck(t *testing.T) {
	f := newFixture(t)
	c, log := importing(t, f.ref)
	wantPin := sha([]byte("the download the recipe pins"))
	check := func(dir string) error {
		data, err := os.ReadFile(filepath.Join(dir, "record.json"))
		if err != nil {
			return err
		}
		var rec struct{ SHA256 string }
		if err := json.Unmarshal(data, &rec); err != nil {
			return err
		}
		if rec.SHA256 != wantPin {
			return fmt.Errorf("its record pins sha256 %s, the recipe %s", rec.SHA256, wantPin)
		}
		return nil
	}
	if _, ok := c.ArtifactChecked(f.art1, check); ok {
		t.Fatal("an entry with other pins was taken")
	}
	if !strings.Contains(log.String(), "its record pins sha256") {
		t.Errorf("the refusal was not reported; log:\n%s", log)
	}
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("the local cache took %v", got)
	}
	// A local entry is the caller's own: not passed to the check.
	commitArtifact(t, c, f.art2, artifactFiles("two", "local"))
	if _, ok := c.ArtifactChecked(f.art2, func(string) error { return errors.New("called") }); !ok {
		t.Error("the local entry was passed to the check")
	}
}

// A blob altered on its way from the registry never enters the cache.
func TestRegistryCacheBlobTamperedInTransit(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		rewrite func([]byte) []byte
	}{
		{"a byte flipped", func(b []byte) []byte {
			b = bytes.Clone(b)
			b[len(b)/2] ^= 1
			return b
		}},
		{"more bytes than the manifest says", func(b []byte) []byte { return append(bytes.Clone(b), make([]byte, 4096)...) }},
		{"fewer", func(b []byte) []byte { return b[:len(b)-1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.tp.mu.Lock()
			f.tp.blob = tc.rewrite
			f.tp.mu.Unlock()
			defer func() { f.tp.mu.Lock(); f.tp.blob = nil; f.tp.mu.Unlock() }()
			c, log := importing(t, f.ref)
			if _, ok := c.Artifact(f.art1); ok {
				t.Error("the altered artifact entry was taken")
			}
			if _, _, ok := c.Layer(f.lay1); ok {
				t.Error("the altered layer was taken")
			}
			if n := strings.Count(log.String(), "shared cache"); n != 2 {
				t.Errorf("%d warnings, want 2; log:\n%s", n, log)
			}
			if got := entries(t, c); len(got) != 0 {
				t.Errorf("the local cache took %v", got)
			}
		})
	}
}

// An import never replaces a whole local entry with the registry's, even
// one made between the lookup that missed and the import.
func TestImportKeepsLocalEntries(t *testing.T) {
	f := newFixture(t)
	c, log := importing(t, f.ref)

	local := commitArtifact(t, c, f.art1, artifactFiles("one", "made here"))
	dir, ok := c.pullArtifact(f.art1, nil)
	if !ok || dir != local {
		t.Fatalf("pull returned %s %v", dir, ok)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "record.json")); !strings.Contains(string(b), "made here") {
		t.Errorf("the local artifact entry was replaced: %s", b)
	}

	// The local layer for the key is another compression of the same tar.
	mine, myBlob := putLayer(t, c, f.lay1, []byte("made here"))
	if !c.pullLayer(f.lay1, nil) {
		t.Fatalf("pull failed; log:\n%s", log)
	}
	if e, blob, ok := c.Layer(f.lay1); !ok || e != mine || blob != myBlob {
		t.Errorf("the local layer entry was replaced: %+v %s", e, blob)
	}

	// An entry that is not whole is no entry: the import replaces it.
	if err := os.WriteFile(myBlob, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, _, ok := c.Layer(f.lay1); !ok || e != f.layers[f.lay1] {
		t.Errorf("the registry's layer did not replace a damaged local one: %+v %v; log:\n%s", e, ok, log)
	}
}

// An export sends what is whole: a layer whose blob was damaged is left
// out (the registry's copy, if any, stays), as is an artifact entry that
// is not there any more.
func TestExportLeavesOutDamagedEntries(t *testing.T) {
	reg := testregistry.Start(t, nil)
	ref := reg.Host + "/ci/export:main"
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	good, bad := Key("layer", "good"), Key("layer", "bad")
	putLayer(t, c, good, []byte("good"))
	_, blob := putLayer(t, c, bad, []byte("bad layer content"))
	rewriteInPlace(t, blob, 0, []byte{0})
	gone := Key("artifact", "gone")
	commitArtifact(t, c, gone, artifactFiles("gone", "x"))
	if err := c.DropArtifact(gone); err != nil {
		t.Fatal(err)
	}
	if err := c.ExportTo(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(ref)
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 || m.Layers[0].Annotations[annLayer] != good {
		t.Errorf("exported %+v, want the good layer alone", m.Layers)
	}
	if !strings.Contains(log.String(), "damaged") {
		t.Errorf("the damaged blob was not reported; log:\n%s", log)
	}
}

// An entry exported before markers named their key is not taken: nothing
// binds it to the key the manifest files it under.
func TestRegistryCacheEntryWithoutKey(t *testing.T) {
	f := newFixture(t)
	// Push an entry the way older exports made it: an empty marker.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range map[string]string{"complete": "", "record.json": "{}", "digest": "d", "tree/x": "x"} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))})
		tw.Write([]byte(content))
	}
	tw.Close()
	blob := gzipped(t, buf.Bytes())
	repo, _ := name.NewRepository(f.reg.Host + "/ci/cache")
	if err := remote.WriteLayer(repo, static.NewLayer(blob, artifactEntryType)); err != nil {
		t.Fatal(err)
	}
	ref := f.serve(t, "old", f.edited(t, func(m *v1.Manifest) {
		d := entry(m, annArtifact, f.art1)
		d.Digest, d.Size = v1.Hash{Algorithm: "sha256", Hex: sha(blob)}, int64(len(blob))
	}))
	c, log := importing(t, ref)
	if _, ok := c.Artifact(f.art1); ok {
		t.Fatal("an entry naming no key was taken")
	}
	if !strings.Contains(log.String(), "does not name its key") {
		t.Errorf("no warning; log:\n%s", log)
	}
}

// An entry whose manifest declares more than limits.download is refused
// before a byte of it is asked for: a hostile cache that claims 8 GiB an
// entry and serves endless bytes filled the disk through --max-download
// 1MiB (found by the hostile-input probe, 24). The refusal is one
// warning, however many times the build looks the entry up, and the
// cache stays as it was: the other entries are still imported.
func TestRegistryCacheEntryOverDownloadLimit(t *testing.T) {
	f := newFixture(t)
	var bloated []string
	ref := f.serve(t, "bloated", f.edited(t, func(m *v1.Manifest) {
		for _, d := range []*v1.Descriptor{entry(m, annLayer, f.lay1), entry(m, annArtifact, f.art1)} {
			d.Size = 8 << 30
			bloated = append(bloated, d.Digest.String())
		}
	}))
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	c.Limits = Limits{Limits: transfer.Limits{MaxBytes: 1 << 20}}
	if err := c.ImportFrom(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	// As the build looks entries up: once, and again under the key's lock.
	for range 2 {
		layer, err := Aside(c, "layer-"+f.lay1, func(bool) (bool, bool) { _, _, ok := c.Layer(f.lay1); return ok, ok },
			func() (bool, error) { return false, nil })
		if err != nil || layer {
			t.Fatalf("the bloated layer entry was taken (%v)", err)
		}
		art, err := Aside(c, "artifact-"+f.art1, func(bool) (bool, bool) { _, ok := c.Artifact(f.art1); return ok, ok },
			func() (bool, error) { return false, nil })
		if err != nil || art {
			t.Fatalf("the bloated artifact entry was taken (%v)", err)
		}
	}
	f.tp.mu.Lock()
	for _, d := range bloated {
		if n := f.tp.gets[d]; n != 0 {
			t.Errorf("blob %s was asked for %d times", d, n)
		}
	}
	f.tp.mu.Unlock()
	if n := strings.Count(log.String(), "limits.download"); n != 2 || len(log.lines) != 2 {
		t.Errorf("%d warnings naming the limit, want one an entry; log:\n%s", n, log)
	}
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("the local cache took %v", got)
	}
	if _, _, ok := c.Layer(f.lay2); !ok {
		t.Errorf("a sound entry was not imported; log:\n%s", log)
	}
	if _, ok := c.Artifact(f.art2); !ok {
		t.Errorf("a sound entry was not imported; log:\n%s", log)
	}
}

// A registry that drips an entry slower than the minimum rate loses it:
// it would otherwise hold the build for as long as its size takes at that
// pace.
func TestRegistryCacheEntryTooSlow(t *testing.T) {
	f := newFixture(t)
	f.tp.mu.Lock()
	f.tp.drip = 50 * time.Millisecond
	f.tp.mu.Unlock()
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	// The window is long enough for the registry's first answer under
	// -race on a loaded machine (100 ms was not, at load 21), and ten of
	// the drip's pauses, so that the rate, not a stall, ends the entry.
	c.Limits = Limits{Limits: transfer.Limits{Stall: 500 * time.Millisecond, MinRate: 1 << 20}}
	if err := c.ImportFrom(context.Background(), f.ref); err != nil {
		t.Fatal(err)
	}
	// Looked up again, as the build may: refused without a second pull.
	for range 2 {
		if _, _, ok := c.Layer(f.lay1); ok {
			t.Fatal("the dripped entry was taken")
		}
	}
	if !strings.Contains(log.String(), "bytes/s") || strings.Count(log.String(), "not used") != 1 {
		t.Errorf("want one warning of the rate; log:\n%s", log)
	}
	f.tp.mu.Lock()
	if n := f.tp.gets[f.layers[f.lay1].Digest]; n != 1 {
		t.Errorf("the dripped blob was asked for %d times", n)
	}
	f.tp.mu.Unlock()
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("the local cache took %v", got)
	}
}

// A registry that never answers for an entry loses it after limits.stall,
// not after the registry transport's own stall timeout (a minute).
func TestRegistryCacheEntryNoAnswer(t *testing.T) {
	f := newFixture(t)
	f.tp.mu.Lock()
	f.tp.hang = true
	f.tp.mu.Unlock()
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	c.Limits = Limits{Limits: transfer.Limits{Stall: 100 * time.Millisecond}}
	if err := c.ImportFrom(context.Background(), f.ref); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, ok := c.Layer(f.lay1); ok {
		t.Fatal("an entry never sent was taken")
	}
	// Nor after the client library's retries, which would meet the
	// same ended context after seconds of backoff.
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("waited %s for an entry, with limits.stall 100ms", elapsed)
	}
	if !strings.Contains(log.String(), "nothing moved for 100ms") {
		t.Errorf("no warning of the stall; log:\n%s", log)
	}
}

// Each request for an entry (the client library's ping, then the blob's
// GET) may wait limits.stall for its answer, as any registry request: a
// registry that answers each within it, however long they take together,
// gives the entry.
func TestRegistryCacheEntryAnswersWithinStall(t *testing.T) {
	f := newFixture(t)
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	// Each answer takes half the stall window: the other half is the
	// margin a loaded machine under -race needs (0.3 s was not enough at
	// load 20).
	const stall = 2 * time.Second
	c.Limits = Limits{Limits: transfer.Limits{Stall: stall}}
	if err := c.ImportFrom(context.Background(), f.ref); err != nil {
		t.Fatal(err)
	}
	f.tp.mu.Lock()
	f.tp.slow = stall / 2
	f.tp.mu.Unlock()
	if _, _, ok := c.Layer(f.lay1); !ok {
		t.Fatalf("an entry whose requests each answered within limits.stall was not taken; log:\n%s", log)
	}
}

// A layer entry is decompressed, to check its diff ID, within
// limits.extract: a small blob that expands to terabytes would otherwise
// keep the build reading for hours. It is refused, said once, naming the
// cache and the blob, and not kept.
func TestRegistryCacheLayerOverExtractLimit(t *testing.T) {
	f := newFixture(t)
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	// The fixture's layers expand to some 600 bytes.
	c.Limits = Limits{MaxExtract: 100}
	if err := c.ImportFrom(context.Background(), f.ref); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, ok := c.Layer(f.lay1); ok {
			t.Fatal("a layer expanding past limits.extract was taken")
		}
	}
	digest := f.layers[f.lay1].Digest
	if len(log.lines) != 1 || !strings.Contains(log.String(), "expands beyond the limit of 100 bytes (limits.extract") ||
		!strings.Contains(log.String(), f.ref) || !strings.Contains(log.String(), digest) {
		t.Errorf("want one warning naming the cache, the blob and the limit; log:\n%s", log)
	}
	if got := entries(t, c); len(got) != 0 {
		t.Errorf("the local cache took %v", got)
	}
}
