package regauth_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
)

// A token server that redirects the token request to another host (here
// localhost for 127.0.0.1) gets the registry's credentials, and the other
// host does not: net/http drops the Authorization header on a redirect
// across hosts, and go-containerregistry sets it on the first request
// only.
func TestTokenRedirectToAnotherHostGetsNoCredentials(t *testing.T) {
	var mu sync.Mutex
	var seen []string // host and Authorization of each request
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte(`{"token":"abc"}`))
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	var withCreds atomic.Bool
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			if u, _, ok := r.BasicAuth(); ok && u == "alice" {
				withCreds.Store(true)
			}
			http.Redirect(w, r, otherURL+"/token?"+r.URL.RawQuery, http.StatusFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer abc" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+`/token",service="x"`)
			w.WriteHeader(401)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", cfg)
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/a/b:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(10, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The push itself fails (the registry here has no upload), after
	// the token was fetched.
	_ = remote.Write(ref, img, regauth.Options(context.Background())...)
	mu.Lock()
	defer mu.Unlock()
	if !withCreds.Load() {
		t.Fatal("the token server got no credentials: nothing was there to leak")
	}
	if len(seen) == 0 {
		t.Fatal("the token request did not reach the host it was redirected to")
	}
	for _, s := range seen {
		if _, auth, _ := strings.Cut(s, " "); auth != "" {
			t.Errorf("the other host got credentials: %s", s)
		}
	}
}
