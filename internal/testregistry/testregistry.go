// Package testregistry starts a real OCI distribution registry
// (github.com/distribution/distribution/v3, in memory) on loopback for
// tests: pushes and pulls go through the same HTTP API as in production.
package testregistry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the storage driver the config names
	"github.com/sirupsen/logrus"
)

// Registry is a running registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", to prefix repository names.
	Host   string
	Server *httptest.Server
}

// Start runs a registry until the test ends. wrap, if non-nil, wraps the
// registry handler (to inject faults or count requests).
func Start(t testing.TB, wrap func(http.Handler) http.Handler) *Registry {
	t.Helper()
	logrus.SetOutput(io.Discard)
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	cfg.HTTP.Secret = "pallet-test"
	// Like the registries Windows images are pushed to, accept manifests
	// whose foreign layers point elsewhere (distribution's default refuses
	// any layer URL).
	cfg.Validation.Manifests.URLs.Allow = []string{"^https://"}
	var h http.Handler = handlers.NewApp(context.Background(), cfg)
	if wrap != nil {
		h = wrap(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return &Registry{Host: strings.TrimPrefix(s.URL, "http://"), Server: s}
}
