package image

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// registryBase pushes a one-layer linux/amd64 image to a registry on
// loopback and returns its reference and a count of blob downloads.
func registryBase(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var gets atomic.Int64
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				gets.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	return pushRandomBase(t, reg.Host), &gets
}

// pushRandomBase pushes a one-layer linux/amd64 image of 256 KiB to the
// registry at host and returns its reference.
func pushRandomBase(t *testing.T, host string) string {
	t.Helper()
	img, err := random.Image(256<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := host + "/base/tiny:1"
	nref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(nref, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

// storedLayer resolves ref through a resolver keeping blobs in c and
// returns its one layer.
func storedLayer(t *testing.T, c *cache.Cache, ref string) v1.Layer {
	t.Helper()
	r := &Resolver{Blobs: c}
	img, err := r.Base(context.Background(), ref, linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return ls[0]
}

func readAll(l v1.Layer) (int64, error) {
	rc, err := l.Compressed()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.Copy(io.Discard, rc)
}

// A stored blob altered in place, with its size, inode and mtime kept, is
// found before it is used (the memory of digests compares the ctime too),
// dropped and downloaded again: the read gets the right bytes.
func TestStoredBaseBlobAlteredInPlace(t *testing.T) {
	ref, gets := registryBase(t)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := storedLayer(t, c, ref)
	if _, err := readAll(l); err != nil {
		t.Fatal(err)
	}
	d, _ := l.Digest()
	path := c.Blob(d.Hex)
	// An old mtime lets the store remember the digest, as it would for a
	// blob downloaded by an earlier build.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if sum, err := c.FileSHA256(path); err != nil || sum != d.Hex {
		t.Fatalf("stored blob hashes to %s (%v), want %s", sum, err, d.Hex)
	}
	flipFile(t, path, "")
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	fetched := gets.Load()

	again := storedLayer(t, c, ref)
	if err := validate.Layer(again); err != nil {
		t.Fatalf("the altered blob reached a reader: %v", err)
	}
	if got := gets.Load() - fetched; got < 1 {
		t.Fatal("the blob was not downloaded again")
	}
	if sum, err := cache.HashFile(path); err != nil || sum != d.Hex {
		t.Fatalf("the stored blob hashes to %s (%v), want %s", sum, err, d.Hex)
	}
}

// A stored blob of the wrong size is found before any of it is read, and
// fetched again at once.
func TestStoredBaseBlobTruncatedIsFetchedAgain(t *testing.T) {
	ref, gets := registryBase(t)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := storedLayer(t, c, ref)
	if _, err := readAll(l); err != nil {
		t.Fatal(err)
	}
	d, _ := l.Digest()
	if err := os.Truncate(c.Blob(d.Hex), 10); err != nil {
		t.Fatal(err)
	}
	fetched := gets.Load()
	again := storedLayer(t, c, ref)
	if err := validate.Layer(again); err != nil {
		t.Fatal(err)
	}
	if gets.Load() == fetched {
		t.Fatal("the truncated blob was not downloaded again")
	}
}

// Once stored, a blob is served from the store, not downloaded again.
func TestStoredBaseBlobServedFromStore(t *testing.T) {
	ref, gets := registryBase(t)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(storedLayer(t, c, ref)); err != nil {
		t.Fatal(err)
	}
	l := storedLayer(t, c, ref)
	fetched := gets.Load()
	if err := validate.Layer(l); err != nil {
		t.Fatal(err)
	}
	if gets.Load() != fetched {
		t.Fatalf("a stored blob was downloaded again (%d downloads)", gets.Load()-fetched)
	}
}

// A base layer whose body breaks off (the connection closed or reset
// half-way) is fetched again, as a download is: go-containerregistry
// retries a request that fails, not a body cut short, and one reset
// failed the build. A body that arrives whole with the wrong bytes is
// not fetched again, nor is one that keeps breaking off past the retries.
func TestBaseBlobBrokenOffIsFetchedAgain(t *testing.T) {
	defer func(b time.Duration) { fetchBackoff = b }(fetchBackoff)
	fetchBackoff = time.Millisecond
	for _, c := range []struct {
		name      string
		breaks    int64 // how many blob GETs are cut short
		corrupt   bool
		wantGets  int64
		wantError string
	}{
		{"once", 1, false, 2, ""},
		{"every time", 100, false, 4, "gave up after 4 attempts"},
		{"wrong bytes", 0, true, 1, "error verifying sha256 checksum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var gets atomic.Int64
			reg := testregistry.Start(t, breakingLayers(&gets, c.breaks, c.corrupt))
			ref := pushRandomBase(t, reg.Host)
			cc, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = readAll(storedLayer(t, cc, ref))
			switch {
			case c.wantError == "" && err != nil:
				t.Fatalf("reading the layer: %v", err)
			case c.wantError != "" && (err == nil || !strings.Contains(err.Error(), c.wantError)):
				t.Fatalf("got %v, want %q", err, c.wantError)
			}
			if got := gets.Load(); got != c.wantGets {
				t.Errorf("the layer was fetched %d times, want %d", got, c.wantGets)
			}
		})
	}
}

// breakingLayers wraps a registry so that the first breaks GETs of a
// layer blob (the config, smaller, passes) are cut off half-way by a
// closed connection, and, with corrupt, the rest carry one byte flipped.
// gets counts the layer GETs.
func breakingLayers(gets *atomic.Int64, breaks int64, corrupt bool) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			if len(body) < 64<<10 {
				w.WriteHeader(rec.Code)
				w.Write(body) // the config
				return
			}
			n := gets.Add(1)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			switch {
			case n <= breaks:
				w.Write(body[:len(body)/2])
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				conn.Close()
			case corrupt:
				body = bytes.Clone(body)
				body[len(body)/2] ^= 0xff
				w.Write(body)
			default:
				w.Write(body)
			}
		})
	}
}

// A build interrupted while a broken-off base layer waits to be fetched
// again stops at once, not after the backoff: the wait is on the
// build's context.
func TestBaseBlobRefetchStopsWhenInterrupted(t *testing.T) {
	defer func(b time.Duration) { fetchBackoff = b }(fetchBackoff)
	fetchBackoff = 30 * time.Second
	var gets atomic.Int64
	reg := testregistry.Start(t, breakingLayers(&gets, 100, false))
	ref := pushRandomBase(t, reg.Host)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	img, err := (&Resolver{Blobs: c}).Base(ctx, ref, linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	// Cancelled once the first GET was cut off and its reader has had
	// time to see so: the fetch is then in its backoff.
	go func() {
		for gets.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err = readAll(ls[0])
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("reading the layer after the build was interrupted: %v, want context.Canceled", err)
	}
	if took > 10*time.Second {
		t.Errorf("the read returned %s after it began, past the interruption; the backoff was waited out", took.Round(time.Millisecond))
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("the layer was fetched %d times, want 1", n)
	}
}
