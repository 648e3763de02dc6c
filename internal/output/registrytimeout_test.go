package output

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/testregistry"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// slowBody reads what it wraps 16 KiB every 10 ms.
type slowBody struct{ io.ReadCloser }

func (b slowBody) Read(p []byte) (int, error) {
	time.Sleep(10 * time.Millisecond)
	return b.ReadCloser.Read(p[:min(len(p), 16<<10)])
}

// A registry that takes a blob in at 1.6 MB/s, far above any floor, but
// too slowly for the bound on one request (limits.download-timeout): the
// push fails at the bound, naming the blob, the time and the bytes
// sent, sends that blob once (go-containerregistry does not retry a
// request that took the whole bound), and no tag, nor the image's
// manifest, points at what went half up. Without the bound the push
// would take 20 s here, and as long as the blob's size takes at its pace
// in the field.
func TestPushBlobTimeout(t *testing.T) {
	var slow atomic.Int32 // PATCHes of over 1 MiB: the big blob's tries
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPatch {
				if r.ContentLength > 1<<20 {
					slow.Add(1)
				}
				r.Body = slowBody{r.Body}
			}
			h.ServeHTTP(w, r)
		})
	})
	big := static.NewLayer(bytes.Repeat([]byte("pallet"), 32<<20/6), types.OCILayer)
	bigDigest := digest(t, big)
	img := newImage(t, "amd64", newLayer(t), big)
	ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: 5 * time.Second}, Total: time.Second})
	r := &Registry{Ref: reg.Host + "/slow/img", Options: []remote.Option{fastRetry}}
	start := time.Now()
	err := r.Write(ctx, []Image{{Repository: "img", Tags: []string{"1"}, Image: img}})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "upload "+bigDigest.String()) ||
		!strings.Contains(err.Error(), "over the 1s one registry request may take (limits.download-timeout, --download-timeout;") ||
		!strings.Contains(err.Error(), "body bytes sent") {
		t.Fatalf("push to a slow registry: %v", err)
	}
	if took > 10*time.Second {
		t.Errorf("the push went on for %s", took)
	}
	if n := slow.Load(); n != 1 {
		t.Errorf("the big blob was sent %d times, want once", n)
	}
	for _, ref := range []string{"1", digest(t, img).String()} {
		if s := status(t, reg.Host, "slow/img", "manifests", ref); s != http.StatusNotFound {
			t.Errorf("manifest %s after a push cut off: HTTP %d, want 404", ref, s)
		}
	}
}

// A blob whose early upload ran out of its time is not sent again by
// Write, which would take as long again: Write fails at once naming the
// blob and the bound, and no tag moves.
func TestPushEarlyBlobTimeoutNotSentAgain(t *testing.T) {
	var slow atomic.Int32
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPatch {
				if r.ContentLength > 1<<20 {
					slow.Add(1)
				}
				r.Body = slowBody{r.Body}
			}
			h.ServeHTTP(w, r)
		})
	})
	big := static.NewLayer(bytes.Repeat([]byte("pallet"), 32<<20/6), types.OCILayer)
	bigDigest := digest(t, big)
	img := newImage(t, "amd64", newLayer(t), big)
	ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: 5 * time.Second}, Total: time.Second})
	r := &Registry{Ref: reg.Host + "/slow/early:1", Options: []remote.Option{fastRetry}}
	defer r.Finish()
	r.Prepare(ctx, "early", []string{"1"}, big)
	r.early.wg.Wait() // the early uploads are over
	err := r.Write(ctx, []Image{{Repository: "early", Tags: []string{"1"}, Image: img}})
	if err == nil || !strings.Contains(err.Error(), "upload "+bigDigest.String()) ||
		!strings.Contains(err.Error(), "over the 1s one registry request may take") ||
		!strings.Contains(err.Error(), "took the whole of its time; pallet sent it nothing more") {
		t.Fatalf("push after an early upload ran out of time: %v", err)
	}
	if n := slow.Load(); n != 1 {
		t.Errorf("the big blob was sent %d times, want once", n)
	}
	for _, ref := range []string{"1", digest(t, img).String()} {
		if s := status(t, reg.Host, "slow/early", "manifests", ref); s != http.StatusNotFound {
			t.Errorf("manifest %s after a push cut off: HTTP %d, want 404", ref, s)
		}
	}
}
