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
// Retry-After over transfer.MaxRetryAfter (a huge one, a date far off)
// fails the push at once, saying how long it asked to wait: it is not
// obeyed (a shorter one is, TestRegistryRetryAfterWaited), nor retried
// seconds later, when it would refuse alike (before, each request was
// tried three times and the error said nothing of the wait). One that
// answers 503 is given up after go-containerregistry's few retries on
// its backoff. Neither holds the push for long, nor repeats a request in
// a loop. The error names the registry, the repository and the status.
func TestPushRateLimitedIsBounded(t *testing.T) {
	for _, c := range []struct {
		name, retryAfter, status string
		code                     int
		// says is what the error says of the wait; most, the most
		// requests the push may make.
		says string
		most int32
	}{
		{"429 for ever", "99999999", "429 Too Many Requests", http.StatusTooManyRequests, "the registry asks to be asked again in 27777h46m39s, its Retry-After, longer than the 1m0s pallet waits; try again later", 3},
		{"429 till 2099", "Wed, 21 Oct 2099 07:28:00 GMT", "429 Too Many Requests", http.StatusTooManyRequests, "the registry asks to be asked again in ", 3},
		// Three blobs, each tried three times.
		{"503", "", "503 Service Unavailable", http.StatusServiceUnavailable, "", 12},
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
			for _, w := range []string{"push " + reg.Host + "/team/app:1", c.status, c.says} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			if got := n.Load(); got > c.most {
				t.Errorf("%d requests to a registry that refused every one", got)
			}
		})
	}
}
