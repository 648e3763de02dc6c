package regauth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// A registry named insecure that speaks plain HTTP on a name that is not
// loopback (for which go-containerregistry tries HTTPS only) is reached
// over HTTP; another name on the same server is not.
func TestInsecureFallsBackToPlainHTTP(t *testing.T) {
	var plain atomic.Int32
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain.Add(1)
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	// Every *.test name leads to the loopback server, as DNS would.
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	t.Cleanup(base.CloseIdleConnections)
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	push := func(rt http.RoundTripper, host string) error {
		ref, err := name.ParseReference(host + ":" + port + "/pallet/plain:1")
		if err != nil {
			t.Fatal(err)
		}
		return remote.Write(ref, img, remote.WithTransport(rt))
	}
	r := newRouter(base, []string{"registry.test"}, Timeouts{})
	if err := push(Transport(base, Timeouts{}), "registry.test"); err == nil {
		t.Fatal("a push to a plain HTTP registry on a non-loopback name succeeded without --insecure")
	}
	if err := push(r, "other.test"); err == nil {
		t.Fatal("a registry not named insecure was reached over plain HTTP")
	}
	plain.Store(0)
	if err := push(r, "registry.test"); err != nil {
		t.Fatalf("push to the registry named insecure: %v", err)
	}
	if plain.Load() == 0 {
		t.Fatal("the registry saw no request")
	}
	ref, _ := name.ParseReference("registry.test:" + port + "/pallet/plain:1")
	got, err := remote.Image(ref, remote.WithTransport(r))
	if err != nil {
		t.Fatal(err)
	}
	gd, _ := got.Digest()
	wd, _ := img.Digest()
	if gd != wd {
		t.Errorf("pulled %s, pushed %s", gd, wd)
	}
}

// When a token server on another host refuses, the message names the
// registry whose credentials were sent, not the token server.
func TestExplainThroughTokenServer(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`, http.StatusUnauthorized)
	}))
	t.Cleanup(tokens.Close)
	_, tokenPort, _ := net.SplitHostPort(tokens.Listener.Addr().String())
	tokenHost := "tokens.test:" + tokenPort
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+tokenHost+`/token",service="test"`)
		http.Error(w, "", http.StatusUnauthorized)
	}))
	t.Cleanup(reg.Close)
	host := reg.Listener.Addr().String()
	// tokens.test is the token server, as DNS would have it.
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "tokens.test:") {
			addr = tokens.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	ref, err := name.ParseReference(host + "/pallet/x:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, login := range []bool{false, true} {
		if login {
			if _, err := Login(host, "alice", "pw"); err != nil {
				t.Fatal(err)
			}
		}
		l := &lookup{}
		_, err = remote.Get(ref, remote.WithAuthFromKeychain(noting{base: authn.DefaultKeychain, l: l}), remote.WithTransport(marking{inner: base, l: l}))
		if err == nil {
			t.Fatal("get succeeded")
		}
		msg := Explain(err).Error()
		want := "found none for it"
		if login {
			want = "refused the credentials pallet found"
		}
		if !strings.Contains(msg, "\n"+host+" ") || !strings.Contains(msg, want) || !strings.Contains(msg, "token server "+tokenHost) {
			t.Errorf("login %v: %s", login, msg)
		}
	}
}
