// Package testregistry starts a real OCI distribution registry
// (github.com/distribution/distribution/v3, in memory) on loopback for
// tests: pushes and pulls go through the same HTTP API as in production.
package testregistry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd" // the access controller StartWithAuth names
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the storage driver the config names
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
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
	return start(t, nil, wrap)
}

// StartWithAuth runs a registry that answers only to user and password,
// with HTTP basic authentication checked by distribution's htpasswd module.
func StartWithAuth(t testing.TB, user, password string) *Registry {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(file, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return start(t, configuration.Auth{"htpasswd": configuration.Parameters{"realm": "pallet-test", "path": file}}, nil)
}

func start(t testing.TB, auth configuration.Auth, wrap func(http.Handler) http.Handler) *Registry {
	logrus.SetOutput(io.Discard)
	cfg := &configuration.Configuration{}
	cfg.Auth = auth
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
