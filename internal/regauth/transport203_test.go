package regauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/regauth"
)

// WithStored hears of the blobs a registry says it stored (201 Created
// to an upload's PUT or a mount's POST), with their repository, and of
// nothing else: an upload started (202), a blob found (HEAD), a
// manifest put, a refusal.
func TestWithStoredNotesStoredBlobs(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "/refused/"):
			w.WriteHeader(http.StatusForbidden)
		case r.Method == http.MethodPost && r.URL.Query().Get("from") == "":
			w.WriteHeader(http.StatusAccepted) // no mount: an upload starts
		case r.Method == http.MethodHead:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	var heard []string
	ctx := regauth.WithStored(context.Background(), func(repo, digest string) { heard = append(heard, repo+"@"+digest) })
	rt := regauth.Transport(http.DefaultTransport, regauth.Timeouts{})
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/v2/team/app/blobs/uploads/?mount=" + d},
		{http.MethodPost, "/v2/team/app/blobs/uploads/?mount=" + d + "&from=team/other"},
		{http.MethodPut, "/v2/team/app/blobs/uploads/u1?digest=" + d},
		{http.MethodPut, "/v2/refused/app/blobs/uploads/u2?digest=" + d},
		{http.MethodHead, "/v2/team/app/blobs/" + d},
		{http.MethodPut, "/v2/team/app/manifests/1.0"},
	} {
		req, err := http.NewRequestWithContext(ctx, r.method, srv.URL+r.path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		resp.Body.Close()
	}
	want := []string{host + "/team/app@" + d, host + "/team/app@" + d}
	if !slices.Equal(heard, want) {
		t.Errorf("heard %q, want %q (the mount and the upload's PUT)", heard, want)
	}
}
