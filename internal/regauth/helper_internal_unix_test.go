//go:build unix

package regauth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
