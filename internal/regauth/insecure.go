package regauth

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// insecureKey is the context key of the registries named insecure.
type insecureKey struct{}

// WithInsecure returns ctx with registries added to those Options may
// reach over plain HTTP or over TLS without verifying the certificate
// (crane's and ko's --insecure). Each is "HOST" (every port of HOST) or
// "HOST:PORT"; docker.io means index.docker.io, as in image references.
// Every other registry is verified as before, and token servers on other
// hosts too.
func WithInsecure(ctx context.Context, registries ...string) (context.Context, error) {
	if len(registries) == 0 {
		return ctx, nil
	}
	set := slices.Clone(insecureOf(ctx))
	for _, r := range registries {
		host, err := insecureName(r)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(set, host) {
			set = append(set, host)
		}
	}
	slices.Sort(set)
	return context.WithValue(ctx, insecureKey{}, set), nil
}

// insecureName checks and normalizes one registry named insecure.
func insecureName(r string) (string, error) {
	if strings.Contains(r, "://") || strings.Contains(r, "/") {
		return "", fmt.Errorf("insecure registry %q: want a registry HOST or HOST:PORT, without a scheme or path", r)
	}
	reg, err := name.NewRegistry(r, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("insecure registry %q: %w", r, err)
	}
	return strings.ToLower(reg.RegistryStr()), nil
}

// insecureOf is the sorted set WithInsecure put in ctx.
func insecureOf(ctx context.Context) []string {
	set, _ := ctx.Value(insecureKey{}).([]string)
	return set
}

// Insecure reports whether ctx allows host ("HOST" or "HOST:PORT", as in
// a URL) plain HTTP and unverified TLS.
func Insecure(ctx context.Context, host string) bool {
	return matchInsecure(insecureOf(ctx), host)
}

func matchInsecure(set []string, host string) bool {
	host = strings.ToLower(host)
	bare := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		bare = h
	}
	for _, s := range set {
		if s == host || s == bare {
			return true
		}
	}
	return false
}

// transportKey names one shared transport: its bounds and the registries
// it treats as insecure.
type transportKey struct {
	t        Timeouts
	insecure string
}

// transportFor is the shared transport for t and the insecure set: the
// bounded default transport when the set is empty, else a router that
// sends the named registries through a copy that does not verify TLS and
// falls back to plain HTTP.
func transportFor(t Timeouts, insecure []string) http.RoundTripper {
	t = t.withDefaults()
	if len(insecure) == 0 {
		rt, ok := transports.Load(t)
		if !ok {
			rt, _ = transports.LoadOrStore(t, Transport(remote.DefaultTransport, t))
		}
		return rt.(http.RoundTripper)
	}
	key := transportKey{t, strings.Join(insecure, ",")}
	rt, ok := transports.Load(key)
	if !ok {
		base := remote.DefaultTransport.(*http.Transport)
		rt, _ = transports.LoadOrStore(key, newRouter(base, insecure, t))
	}
	return rt.(http.RoundTripper)
}

// router sends requests to the insecure registries through its own
// transport, and every other one through the verifying transport.
type router struct {
	secure, insecure http.RoundTripper
	hosts            []string
	// plain remembers the insecure hosts found to speak plain HTTP, so
	// that only the first request to each tries TLS first.
	plain sync.Map // host -> true
}

func newRouter(base *http.Transport, hosts []string, t Timeouts) *router {
	unverified := base.Clone()
	if unverified.TLSClientConfig == nil {
		unverified.TLSClientConfig = &tls.Config{}
	}
	// The user named these registries as ones whose certificate cannot
	// be verified (self-signed, internal CA): what --insecure means.
	unverified.TLSClientConfig.InsecureSkipVerify = true
	return &router{secure: Transport(base, t), insecure: Transport(unverified, t), hosts: hosts}
}

func (r *router) RoundTrip(req *http.Request) (*http.Response, error) {
	if !matchInsecure(r.hosts, req.URL.Host) {
		return r.secure.RoundTrip(req)
	}
	if req.URL.Scheme != "https" {
		return r.insecure.RoundTrip(req)
	}
	if _, ok := r.plain.Load(req.URL.Host); ok {
		return r.plainHTTP(req)
	}
	resp, err := r.insecure.RoundTrip(req)
	if err == nil || req.Context().Err() != nil {
		return resp, err
	}
	// A registry that speaks plain HTTP answers a TLS handshake with an
	// HTTP error or a closed connection. go-containerregistry learns the
	// scheme from the response to its first request (resp.Request), and
	// sends the rest of the operation over it.
	resp, perr := r.plainHTTP(req)
	if perr != nil {
		return nil, fmt.Errorf("%w (and over plain HTTP: %v)", err, perr)
	}
	r.plain.Store(req.URL.Host, true)
	return resp, nil
}

// plainHTTP sends req over http instead of https.
func (r *router) plainHTTP(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme = "http"
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, fmt.Errorf("%s %s: the request body cannot be sent again over plain HTTP", req.Method, req.URL.Redacted())
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		out.Body = body
	}
	return r.insecure.RoundTrip(out)
}
