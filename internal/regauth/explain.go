package regauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// lookup is what the keychain answered during one Options call, per
// registry: whether it had credentials. A refusal is explained from it,
// since the request refused may be to a token server on another host.
type lookup struct {
	mu    sync.Mutex
	found map[string]bool // registry -> credentials found
	last  string
}

func (l *lookup) note(registry string, found bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.found == nil {
		l.found = map[string]bool{}
	}
	l.found[registry] = found
	l.last = registry
}

// about is what was found for the registry host belongs to: host itself
// when the keychain was asked about it, else the registry last asked
// about (host is then its token server).
func (l *lookup) about(host string) (credNote, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.found[host]; ok {
		return credNote{registry: host, found: f}, true
	}
	if l.last == "" {
		return credNote{}, false
	}
	return credNote{registry: l.last, found: l.found[l.last]}, true
}

// credNote travels with a refused request to Explain.
type credNote struct {
	registry string
	found    bool
}

type credNoteKey struct{}

// noting is a keychain that tells its lookup what it found.
type noting struct {
	base authn.Keychain
	l    *lookup
}

func (k noting) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), r)
}

func (k noting) ResolveContext(ctx context.Context, r authn.Resource) (authn.Authenticator, error) {
	a, err := authn.Resolve(ctx, k.base, r)
	if err == nil {
		k.l.note(r.RegistryStr(), a != authn.Anonymous)
	}
	return a, err
}

// marking is a transport that attaches to a 401 or 403 response's request
// what the keychain found, where go-containerregistry's error keeps it.
type marking struct {
	inner http.RoundTripper
	l     *lookup
}

func (m marking) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.inner.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if note, ok := m.l.about(req.URL.Host); ok {
		r := resp.Request
		if r == nil {
			r = req
		}
		resp.Request = r.WithContext(context.WithValue(r.Context(), credNoteKey{}, note))
	}
	return resp, nil
}

// Explain adds to a registry's 401 or 403 whether pallet had credentials
// for it, and where it looked; any other error is returned as it is.
func Explain(err error) error {
	var te *transport.Error
	if !errors.As(err, &te) || (te.StatusCode != http.StatusUnauthorized && te.StatusCode != http.StatusForbidden) {
		return err
	}
	host := ""
	var note credNote
	noted := false
	if te.Request != nil && te.Request.URL != nil {
		host = te.Request.URL.Host
		note, noted = te.Request.Context().Value(credNoteKey{}).(credNote)
	}
	if !noted {
		// Not a call made with Options: ask the keychain now.
		note = credNote{registry: host}
		if reg, rerr := name.NewRegistry(host); rerr == nil && host != "" {
			a, kerr := keychain{}.ResolveContext(context.Background(), reg)
			note.found = kerr == nil && a != authn.Anonymous
		}
	}
	if note.registry == "" {
		note.registry = "the registry"
	}
	via := ""
	if host != "" && host != note.registry {
		via = fmt.Sprintf(" (through its token server %s)", host)
	}
	where := configWhere()
	login := fmt.Sprintf("`pallet auth login %s -u USER --password-stdin`", note.registry)
	// A 403 is also how a registry applies its own rules to a request
	// it let in (an immutable tag, a protected repository): say so
	// rather than only blame the credentials.
	policy := ""
	if te.StatusCode == http.StatusForbidden {
		policy = "; a 403 may also be the registry's own policy refusing this write (an immutable tag, a protected repository), which no login changes"
	}
	if note.found {
		return fmt.Errorf("%w\n%s refused the credentials pallet found for it%s in %s or the credential helper it names: they are wrong or expired, or do not give access to this repository; replace them with %s%s", err, note.registry, via, where, login, policy)
	}
	what := "refused anonymous access"
	if te.StatusCode == http.StatusUnauthorized {
		what = "asks for credentials"
	}
	return fmt.Errorf("%w\n%s %s%s, and pallet found none for it in %s nor a credential helper it names: log in with %s (or docker login); some registries also answer so for a repository that does not exist%s", err, note.registry, what, via, where, login, policy)
}

// configWhere names the docker config for messages.
func configWhere() string {
	p, err := ConfigFile()
	if err != nil {
		return "the docker config ($DOCKER_CONFIG/config.json, else ~/.docker/config.json)"
	}
	return "the docker config " + p
}
