// Package regauth is how pallet authenticates to registries: credentials
// come from the docker config and the credential helpers it names
// (go-containerregistry's default keychain), as for docker and crane,
// Login and Logout write them there, and a refusal is explained in those
// terms. Every request is bounded: it fails when nothing moves for a
// while, or when it has taken too long in all (see Timeouts).
// Registries named with WithInsecure are reached over plain HTTP or
// unverified TLS.
package regauth

import (
	"context"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Options are the remote options every registry call starts from:
// credentials from the docker config as the default keychain reads them
// (its credential helpers run within the stall bound), and a transport bounded by
// ctx's bounds (WithBounds, else the defaults) that reaches the
// registries WithInsecure put in ctx over plain HTTP or unverified TLS.
// Extra ones (jobs, platform) follow
// and may override them; a caller's own transport should be wrapped by
// Transport, or it loses the bounds. A 401 or 403 of a call made with
// these options carries to Explain whether the keychain had credentials.
func Options(ctx context.Context, extra ...remote.Option) []remote.Option {
	l := &lookup{}
	return append([]remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(noting{base: keychain{}, l: l}),
		remote.WithTransport(marking{inner: transportFor(BoundsOf(ctx), insecureOf(ctx)), l: l}),
	}, extra...)
}
