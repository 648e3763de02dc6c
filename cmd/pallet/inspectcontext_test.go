package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// An inspect whose read of an image's config fails (its blob redirected
// to storage that drops the connection) names the image and its config,
// as a build's error names the base, where it said only the request
// (Get "http://...": EOF).
func TestInspectRegistryErrorNamesImage(t *testing.T) {
	var on atomic.Bool
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
	}))
	t.Cleanup(storage.Close)
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				http.Redirect(w, r, storage.URL+"/blob?X-Amz-Signature=SIG", http.StatusTemporaryRedirect)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", "base\n"), "--no-cache", "-o", "registry:"+reg.Host+"/base:1")
	on.Store(true)
	_, _, err := palletOut(t, "inspect", reg.Host+"/base:1")
	if err == nil || !strings.HasPrefix(err.Error(), reg.Host+"/base:1: sha256:") || !strings.Contains(err.Error(), ": reading its config") {
		t.Fatalf("inspect's error does not name the image and its config: %v", err)
	}
}
