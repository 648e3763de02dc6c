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
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A registry that sends its blob reads to storage elsewhere (as those on
// object storage do) gets the credentials; the storage does not, though
// it is on the same machine (another port), where net/http would copy
// a header set on the first request to the redirect.
func TestRedirectedBlobGetsNoCredentials(t *testing.T) {
	const user, pass = "alice", "s3cret"
	var mu sync.Mutex
	var leaked []string
	var inner http.Handler
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Authorization"); h != "" {
			mu.Lock()
			leaked = append(leaked, r.Method+" "+r.URL.Path+": "+h)
			mu.Unlock()
		}
		r.Header.Del("Authorization")
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(storage.Close)
	redirected := 0
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		inner = h
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "credentials", http.StatusUnauthorized)
				return
			}
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				mu.Lock()
				redirected++
				mu.Unlock()
				http.Redirect(w, r, storage.URL+r.URL.Path, http.StatusTemporaryRedirect)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	cfg := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg.Host, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", cfg)
	ref, err := name.ParseReference(reg.Host + "/redirect/x:t")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(4096, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := remote.Write(ref, img, regauth.Options(ctx)...); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref, regauth.Options(ctx)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pulled.ConfigFile(); err != nil {
		t.Fatalf("config through the redirect: %v", err)
	}
	layers, err := pulled.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if redirected == 0 {
		t.Fatal("no blob read was redirected")
	}
	if len(leaked) > 0 {
		t.Errorf("the storage host got the registry's credentials: %q", leaked)
	}
}
