//go:build unix

package regauth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// helperConfig points the docker config at one naming docker-credential-NAME,
// a shell script of body on PATH, for registry.example.com.
func helperConfig(t *testing.T, name, body string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"credHelpers": {"registry.example.com": "`+name+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-"+name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// pallet auth login and logout run the helper within the stall bound, as
// a build does: one that hangs is said naming it, where they waited for
// it for ever.
func TestLoginHelperBounded(t *testing.T) {
	ctx := WithBounds(context.Background(), Timeouts{Limits: transfer.Limits{Stall: time.Second}})
	helperConfig(t, "hangs", "exec sleep 600")
	for _, c := range []struct {
		action string
		call   func() error
	}{
		{"store", func() error { _, err := login(ctx, "registry.example.com", "alice", "s3cret"); return err }},
		{"erase", func() error { _, err := logout(ctx, "registry.example.com"); return err }},
	} {
		done := make(chan error, 1)
		go func() { done <- c.call() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "docker-credential-hangs "+c.action+": gave no answer in 1s") {
				t.Errorf("%s: %v", c.action, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still waits on the helper after 30s; the stall bound is 1s", c.action)
		}
	}
}

// A helper that has nothing to erase says so, as docker's do, and logout
// reports nothing removed, where it failed with the helper's answer.
func TestLogoutHelperHasNothing(t *testing.T) {
	helperConfig(t, "empty", "cat >/dev/null; echo 'credentials not found in native keychain'; exit 1")
	removed, err := Logout("registry.example.com")
	if err != nil || removed {
		t.Fatalf("Logout: removed %v, %v", removed, err)
	}
}

// A helper's refusal to store is said with its reason, which helpers
// print on stdout.
func TestLoginHelperRefusalSaid(t *testing.T) {
	helperConfig(t, "locked", "cat >/dev/null; echo 'the keyring is locked'; exit 1")
	_, err := Login("registry.example.com", "alice", "s3cret")
	if err == nil || !strings.Contains(err.Error(), "docker-credential-locked") || !strings.Contains(err.Error(), "the keyring is locked") {
		t.Fatalf("Login: %v", err)
	}
}

// The helper is run one at a time, as go-containerregistry's keychain ran
// it: lookups going on together (a push to several repositories) do not
// each start one, and a helper asking for a passphrase asks once at a
// time.
func TestHelperRunOneAtATime(t *testing.T) {
	dir := t.TempDir()
	lock, overlap := filepath.Join(dir, "lock"), filepath.Join(dir, "overlap")
	helperConfig(t, "slow", `cat >/dev/null
mkdir "`+lock+`" 2>/dev/null || touch "`+overlap+`"
sleep 0.2
rmdir "`+lock+`"
echo '{"Username":"alice","Secret":"s3cret"}'`)
	reg, err := name.NewRegistry("registry.example.com")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			a, err := keychain{}.ResolveContext(context.Background(), reg)
			if err != nil {
				t.Error(err)
				return
			}
			if cfg, err := a.Authorization(); err != nil || cfg.Username != "alice" {
				t.Errorf("credentials %+v, %v", cfg, err)
			}
		})
	}
	wg.Wait()
	if _, err := os.Stat(overlap); err == nil {
		t.Error("two runs of the helper overlapped")
	}
}
