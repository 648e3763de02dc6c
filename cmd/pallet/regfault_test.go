package main

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A base pinned by digest whose registry then serves other bytes, for a
// layer or for the manifest itself, is refused naming the recipe line,
// the base and the digest that did not match, and the build's cache
// keeps nothing under the digests the bytes were taken for.
func TestRegistryBaseWrongBytesRefused(t *testing.T) {
	const (
		rightBytes = iota
		wrongLayer
		wrongManifest
	)
	var mode atomic.Int32
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m := mode.Load()
			layer := m == wrongLayer && strings.Contains(r.URL.Path, "/blobs/")
			manifest := m == wrongManifest && strings.Contains(r.URL.Path, "/manifests/")
			if r.Method != http.MethodGet || !layer && !manifest {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			switch {
			case layer && len(b) > 0 && b[0] != '{': // not the config
				b[len(b)/2] ^= 0xff
			case manifest:
				// The same manifest to a JSON reader, other bytes.
				b = []byte(strings.Replace(string(b), `"schemaVersion":2`, `"schemaVersion": 2`, 1))
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			w.Write(b)
		})
	})
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", strings.Repeat("base\n", 1000)), "--no-cache", "-o", "registry:"+reg.Host+"/base:1")
	ref, err := name.ParseReference(reg.Host + "/base:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	base := reg.Host + "/base@" + d.String()
	for _, c := range []struct {
		name  string
		mode  int32
		wants []string
	}{
		{"layer", wrongLayer, []string{"pallet.yaml:9", base, "base layer 1 (" + ld.String() + ")", "error verifying sha256 checksum"}},
		{"manifest", wrongManifest, []string{"pallet.yaml:9", base, "does not match requested digest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mode.Store(c.mode)
			defer mode.Store(rightBytes)
			cache := t.TempDir()
			_, _, err := palletOut(t, "build", "-q", "-f", smallRecipe(t, base, "app\n"), "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
			if err == nil {
				t.Fatal("the build took the wrong bytes")
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			filepath.WalkDir(cache, func(p string, e fs.DirEntry, err error) error {
				if err == nil && (strings.Contains(p, ld.Hex) || strings.Contains(p, d.Hex)) {
					t.Errorf("the cache keeps %s", p)
				}
				return nil
			})
		})
	}
	// The same build with the right bytes caches the layer where the
	// check above looks for it.
	cache := t.TempDir()
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, base, "app\n"), "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	found := false
	filepath.WalkDir(cache, func(p string, e fs.DirEntry, err error) error {
		found = found || strings.Contains(p, ld.Hex)
		return nil
	})
	if !found {
		t.Error("a build with the right bytes keeps no file named by the layer's digest: the check of the cache above proves nothing")
	}
}
