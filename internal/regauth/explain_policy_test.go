package regauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// A 403 is said to possibly be the registry's policy, which no login
// changes; a 401 is about credentials only.
func TestExplainSays403MayBePolicy(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	u, _ := url.Parse("http://127.0.0.1:5000/v2/app/manifests/v1")
	for code, policy := range map[int]bool{http.StatusForbidden: true, http.StatusUnauthorized: false} {
		err := Explain(&transport.Error{StatusCode: code, Request: &http.Request{URL: u}})
		if got := strings.Contains(err.Error(), "the registry's own policy"); got != policy {
			t.Errorf("%d: %v", code, err)
		}
	}
}
