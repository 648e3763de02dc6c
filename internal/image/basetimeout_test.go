package image

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/testregistry"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// A base layer a registry sends above any floor (16 KiB/s), but too
// slowly to be done within the bound on one request
// (limits.download-timeout), fails at the bound naming the blob, is not
// fetched again (it would take as long again), and leaves nothing in the
// cache. Without the bound the read would take 16 s here, and as long as
// the layer's size takes at its pace in the field.
func TestBaseBlobTimeout(t *testing.T) {
	var gets atomic.Int64
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
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
			gets.Add(1)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			for r := bytes.NewReader(body); r.Len() > 0; time.Sleep(30 * time.Millisecond) {
				chunk := make([]byte, min(512, r.Len()))
				r.Read(chunk)
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		})
	})
	ref := pushRandomBase(t, reg.Host)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: 5 * time.Second}, Total: time.Second})
	img, err := (&Resolver{Blobs: c}).Base(ctx, ref, linuxAMD64)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ls[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = readAll(ls[0])
	took := time.Since(start)
	var te *regauth.TimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "GET http://"+reg.Host+"/v2/base/tiny/blobs/"+d.String()+": gave up after 1") ||
		!strings.Contains(err.Error(), "over the 1s one registry request may take") || te.Received == 0 {
		t.Fatalf("reading a trickled base layer: %v", err)
	}
	if took > 10*time.Second {
		t.Errorf("the read went on for %s", took)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("the layer was fetched %d times, want once", n)
	}
	if _, err := os.Stat(c.Blob(d.Hex)); !os.IsNotExist(err) {
		t.Errorf("the cache holds the layer cut off: %v", err)
	}
}
