package output

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A registry that answers every request of a push with 429 and a
// Retry-After (a huge one, a date far off) or with 503 is given up after
// go-containerregistry's few retries on its backoff: a Retry-After over
// transfer.MaxRetryAfter is not obeyed (a shorter one is,
// TestRegistryRetryAfterWaited), so it holds no push for its length, and
// no request is repeated in a loop. The error names the registry, the repository and the status.
func TestPushRateLimitedIsBounded(t *testing.T) {
	for _, c := range []struct {
		name, retryAfter, status string
		code                     int
	}{
		{"429 for ever", "99999999", "429 Too Many Requests", http.StatusTooManyRequests},
		{"429 till 2099", "Wed, 21 Oct 2099 07:28:00 GMT", "429 Too Many Requests", http.StatusTooManyRequests},
		{"503", "", "503 Service Unavailable", http.StatusServiceUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			reg := testregistry.Start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/v2/" {
						h.ServeHTTP(w, r)
						return
					}
					n.Add(1)
					if c.retryAfter != "" {
						w.Header().Set("Retry-After", c.retryAfter)
					}
					http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, c.code)
				})
			})
			img := newImage(t, "amd64", newLayer(t), newLayer(t))
			err := (&Registry{Ref: reg.Host + "/team/app:1"}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1"}, Image: img}})
			if err == nil {
				t.Fatal("the push succeeded")
			}
			for _, w := range []string{"push " + reg.Host + "/team/app:1", c.status} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			// Three blobs, each tried three times.
			if got := n.Load(); got > 12 {
				t.Errorf("%d requests to a registry that refused every one", got)
			}
		})
	}
}
