package regauth_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
)

// A registry with a certificate no one signed is reached only when it is
// named insecure, and only that one.
func TestInsecureSkipsVerificationForNamedRegistries(t *testing.T) {
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(testLog{t}, "", 0))))
	// The refused handshakes are the point; keep them out of the log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	ref, err := name.ParseReference(host + "/pallet/tls:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := remote.Write(ref, img, regauth.Options(ctx)...); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("push to an unverifiable registry not named insecure: %v, want a certificate error", err)
	}
	other, err := regauth.WithInsecure(ctx, "127.0.0.2", "registry.example.com:"+srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, regauth.Options(other)...); err == nil {
		t.Fatal("a push to a registry not in the insecure set skipped verification")
	}
	for _, named := range []string{host, "127.0.0.1"} {
		ictx, err := regauth.WithInsecure(ctx, named)
		if err != nil {
			t.Fatal(err)
		}
		if !regauth.Insecure(ictx, host) {
			t.Errorf("Insecure(%s) with %s named: false", host, named)
		}
		if err := remote.Write(ref, img, regauth.Options(ictx)...); err != nil {
			t.Fatalf("push with %s named insecure: %v", named, err)
		}
		got, err := remote.Image(ref, regauth.Options(ictx)...)
		if err != nil {
			t.Fatal(err)
		}
		gd, _ := got.Digest()
		wd, _ := img.Digest()
		if gd != wd {
			t.Errorf("pulled %s, pushed %s", gd, wd)
		}
	}
}

func TestWithInsecureChecksNames(t *testing.T) {
	for _, bad := range []string{"https://registry.example.com", "registry.example.com/team", "", "a b"} {
		if _, err := regauth.WithInsecure(context.Background(), bad); err == nil {
			t.Errorf("WithInsecure(%q): no error", bad)
		}
	}
	ctx, err := regauth.WithInsecure(context.Background(), "Registry.Example.com:5000", "docker.io")
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"registry.example.com:5000": true,
		"registry.example.com:5001": false,
		"registry.example.com":      false,
		"index.docker.io":           true,
		"other.example.com:5000":    false,
	} {
		if got := regauth.Insecure(ctx, host); got != want {
			t.Errorf("Insecure(%s) = %v, want %v", host, got, want)
		}
	}
	if regauth.Insecure(context.Background(), "registry.example.com:5000") {
		t.Error("a context without WithInsecure allows a registry")
	}
}
