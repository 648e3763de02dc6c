package cache

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// An export cut in the middle of a blob upload fails with net/http's
// message, which names the upload URL whole, its signed _state included
// (a secret of the registry's session, as a pre-signed storage URL's
// signature is): the error says the URL without it, as a push's does.
func TestExportErrorHidesUploadState(t *testing.T) {
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut) {
				c, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					c.Close()
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	c, _ := openCache(t, t.TempDir())
	defer c.Close()
	key := Key("layer", "cut")
	putLayer(t, c, key, []byte("a layer whose upload is cut"))
	if _, _, ok := c.Layer(key); !ok {
		t.Fatal("layer not found")
	}
	err := c.ExportTo(context.Background(), reg.Host+"/ci/cut:main", remote.WithRetryBackoff(remote.Backoff{Steps: 1}))
	if err == nil {
		t.Fatal("an export whose uploads are all cut succeeded")
	}
	if m := regexp.MustCompile(`_state=[^&\s"']+`).FindString(err.Error()); m != "" && m != "_state=REDACTED" {
		t.Errorf("the upload state reaches the message: %v", err)
	}
	if !strings.Contains(err.Error(), "shared cache") {
		t.Errorf("the error does not name the shared cache: %v", err)
	}
	// The PATCH that was cut names no blob: the error says which entry.
	if !strings.Contains(err.Error(), "upload layer entry "+key+" (blob sha256:") && !strings.Contains(err.Error(), "upload the cache's config (blob sha256:") {
		t.Errorf("the error does not name the entry it failed on: %v", err)
	}
}
