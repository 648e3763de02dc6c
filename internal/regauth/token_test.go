package regauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// A token server (a Bearer realm) that never answers is given up at the
// stall bound, through go-containerregistry's retries, and one that sends
// a token without end is cut off; one whose token has no expiry is used.
func TestTokenServerBounded(t *testing.T) {
	for _, mode := range []string{"hang", "flood", "noexpiry"} {
		t.Run(mode, func(t *testing.T) {
			var srv *httptest.Server
			var reached atomic.Bool
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/token" {
					switch mode {
					case "hang":
						<-r.Context().Done()
					case "flood":
						w.Write([]byte(`{"token":"`))
						chunk := []byte(strings.Repeat("x", 1<<20))
						for i := 0; i < 10000; i++ {
							if _, err := w.Write(chunk); err != nil {
								return
							}
						}
					case "noexpiry":
						w.Write([]byte(`{"token":"abc"}`))
					}
					return
				}
				if r.Header.Get("Authorization") != "Bearer abc" {
					w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+`/token",service="x"`)
					w.WriteHeader(401)
					return
				}
				reached.Store(true)
				http.NotFound(w, r)
			}))
			t.Cleanup(srv.Close)
			dockerConfig(t)
			ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/a/b:1")
			if err != nil {
				t.Fatal(err)
			}
			ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: time.Second}})
			img, err := random.Image(10, 1)
			if err != nil {
				t.Fatal(err)
			}
			err = remote.Write(ref, img, regauth.Options(ctx)...)
			var se *regauth.StallError
			switch {
			case err == nil:
				t.Fatal("the push succeeded")
			case mode == "hang" && (!errors.As(err, &se) || !strings.HasSuffix(se.URL, "/token")):
				t.Errorf("not a stall of the token request: %v", err)
			case mode == "flood" && !strings.Contains(err.Error(), "exceeds"):
				t.Errorf("not cut off: %.500v", err)
			case mode == "noexpiry" && !reached.Load():
				t.Errorf("the token was not used: %v", err)
			}
		})
	}
}
