package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// inspect, sbom and index create reach a registry outside a build, and
// take --download-timeout as build does: a registry that accepts a
// request for a manifest and then says nothing is given up after the
// bound, naming the request's repository and reference and the bound,
// not after the 1h default (nor the stall bound's minute).
func TestDownloadTimeoutOutsideABuild(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return // the API version check: 200
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		args []string
		ref  string
	}{
		{[]string{"inspect", host + "/app:1"}, "/v2/app/manifests/1"},
		{[]string{"sbom", "registry:" + host + "/app:1"}, "/v2/app/manifests/1"},
		{[]string{"index", "create", host + "/app:1", digest}, "/v2/app/manifests/" + digest},
	} {
		args := append(tc.args, "--download-timeout", "1s")
		start := time.Now()
		_, err := pallet(t, args...)
		if err == nil || !strings.Contains(err.Error(), srv.URL+tc.ref+": gave up after 1") ||
			!strings.Contains(err.Error(), "over the 1s one registry request may take (limits.download-timeout, --download-timeout") {
			t.Errorf("%s: %v, want the request for %s given up after 1s", strings.Join(args, " "), err, tc.ref)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s took %s", strings.Join(args, " "), took)
		}
		bad := append(tc.args, "--download-timeout", "0s")
		if _, err := pallet(t, bad...); err == nil || !strings.Contains(err.Error(), "--download-timeout 0s: want a positive duration") {
			t.Errorf("%s: %v", strings.Join(bad, " "), err)
		}
	}
	// Refused whatever is read, as build refuses it without a download.
	for _, cmd := range []string{"inspect", "sbom"} {
		if _, err := pallet(t, cmd, "oci:"+t.TempDir(), "--download-timeout", "0s"); err == nil || !strings.Contains(err.Error(), "--download-timeout 0s: want a positive duration") {
			t.Errorf("%s oci:DIR --download-timeout 0s: %v", cmd, err)
		}
	}
}
