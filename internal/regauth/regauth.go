// Package regauth is how pallet authenticates to registries: credentials
// come from the docker config and the credential helpers it names
// (go-containerregistry's default keychain), as for docker and crane, and
// a refusal is explained in those terms. Every request is bounded: it
// fails when nothing moves for a while (see Timeouts).
package regauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Options are the remote options every registry call starts from:
// credentials from the default keychain, and a transport bounded by
// DefaultTimeouts. Extra ones (jobs, platform) follow and may override
// them; a caller's own transport should be wrapped by Transport, or it
// loses the bounds.
func Options(ctx context.Context, extra ...remote.Option) []remote.Option {
	return append([]remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		WithTimeouts(DefaultTimeouts),
	}, extra...)
}

// Explain adds to a registry's 401 or 403 where pallet looked for
// credentials; any other error is returned as it is.
func Explain(err error) error {
	var te *transport.Error
	if !errors.As(err, &te) || (te.StatusCode != http.StatusUnauthorized && te.StatusCode != http.StatusForbidden) {
		return err
	}
	host := "the registry"
	if te.Request != nil && te.Request.URL != nil {
		host = te.Request.URL.Host
	}
	return fmt.Errorf("%w\n%s refused access: pallet takes credentials from the docker config ($DOCKER_CONFIG/config.json, else ~/.docker/config.json) as `docker login %s` writes them, or from the credential helper it names for that registry", err, host, host)
}
