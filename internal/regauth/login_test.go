package regauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// dockerConfig points DOCKER_CONFIG (and HOME, which the keychain looks
// in first) at fresh directories and returns the config file's path.
func dockerConfig(t *testing.T) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "docker")
	t.Setenv("DOCKER_CONFIG", dir)
	return filepath.Join(dir, "config.json")
}

// resolve is what go-containerregistry's keychain (pallet's reader) finds.
func resolve(t *testing.T, registry string) *authn.AuthConfig {
	t.Helper()
	reg, err := name.NewRegistry(registry)
	if err != nil {
		t.Fatal(err)
	}
	a, err := authn.DefaultKeychain.Resolve(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoginWritesDockerConfig(t *testing.T) {
	path := dockerConfig(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	other := base64.StdEncoding.EncodeToString([]byte("bob:hunter2"))
	writeFile(t, path, fmt.Sprintf(`{
	"auths": {
		"other.example.com": {"auth": %q},
		"https://registry.example.com:5000/v1/": {"auth": "b2xkOm9sZA=="}
	},
	"psFormat": "table {{.ID}}",
	"somethingNew": {"nested": [1, 2]}
}`, other), 0o644)

	where, err := regauth.Login("registry.example.com:5000", "alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if where != path {
		t.Errorf("Login wrote to %s, want %s", where, path)
	}
	if got := resolve(t, "registry.example.com:5000"); got.Username != "alice" || got.Password != "s3cret" {
		t.Errorf("keychain after login: %+v", got)
	}
	if got := resolve(t, "other.example.com"); got.Username != "bob" {
		t.Errorf("another registry's entry was lost: %+v", got)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", info.Mode().Perm())
	}
	m := readJSON(t, path)
	if m["psFormat"] != "table {{.ID}}" || fmt.Sprint(m["somethingNew"]) != "map[nested:[1 2]]" {
		t.Errorf("unknown fields not kept: %v", m)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("the config directory holds %d files, want only config.json", len(entries))
	}

	// Docker Hub has its historical key.
	if _, err := regauth.Login("docker.io", "carol", "pw"); err != nil {
		t.Fatal(err)
	}
	if _, ok := readJSON(t, path)["auths"].(map[string]any)[authn.DefaultAuthKey]; !ok {
		t.Errorf("docker.io not stored under %s", authn.DefaultAuthKey)
	}

	removed, err := regauth.Logout("https://registry.example.com:5000")
	if err != nil || !removed {
		t.Fatalf("Logout: %v, %v", removed, err)
	}
	if got := resolve(t, "registry.example.com:5000"); got.Username != "" {
		t.Errorf("keychain still finds %+v after logout (older forms of the key must go too)", got)
	}
	if got := resolve(t, "other.example.com"); got.Username != "bob" {
		t.Errorf("logout removed another registry's entry: %+v", got)
	}
	removed, err = regauth.Logout("registry.example.com:5000")
	if err != nil || removed {
		t.Errorf("second Logout: %v, %v; want nothing removed", removed, err)
	}
}

func TestLoginKeepsALinkedConfig(t *testing.T) {
	path := dockerConfig(t)
	real := filepath.Join(t.TempDir(), "real.json")
	writeFile(t, real, `{"auths":{}}`, 0o600)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, path); err != nil {
		t.Fatal(err)
	}
	if _, err := regauth.Login("registry.example.com", "alice", "pw"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the config link was replaced by a file (%v)", err)
	}
	if got := resolve(t, "registry.example.com"); got.Username != "alice" {
		t.Errorf("keychain through the link: %+v", got)
	}
}

// A config naming a credential helper gets the credentials through it,
// as docker does; the file itself holds no secret.
func TestLoginUsesTheCredentialHelper(t *testing.T) {
	path := dockerConfig(t)
	bin := t.TempDir()
	store := filepath.Join(t.TempDir(), "helper")
	// A helper that keeps what it is given, per action, in files.
	writeFile(t, filepath.Join(bin, "docker-credential-pallettest"), `#!/bin/sh
cat > "`+store+`.$1"
`, 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, `{"credHelpers": {"registry.example.com": "pallettest"}}`, 0o600)

	where, err := regauth.Login("registry.example.com", "alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(where, "docker-credential-pallettest") {
		t.Errorf("Login says it wrote to %s", where)
	}
	var got struct{ ServerURL, Username, Secret string }
	data, err := os.ReadFile(store + ".store")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.ServerURL != "registry.example.com" || got.Username != "alice" || got.Secret != "s3cret" {
		t.Errorf("helper got %+v", got)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "auth\"") {
		t.Errorf("the config got a plain entry: %s", data)
	}
	if removed, err := regauth.Logout("registry.example.com"); err != nil || !removed {
		t.Fatalf("Logout: %v %v", removed, err)
	}
	if data, err := os.ReadFile(store + ".erase"); err != nil || strings.TrimSpace(string(data)) != "registry.example.com" {
		t.Errorf("helper erase got %q (%v)", data, err)
	}
}

func TestLoginRefuses(t *testing.T) {
	dockerConfig(t)
	for _, c := range []struct{ reg, user, pass string }{
		{"registry.example.com", "", "pw"},
		{"registry.example.com", "alice", ""},
		{"", "alice", "pw"},
		{"not a host", "alice", "pw"},
	} {
		if _, err := regauth.Login(c.reg, c.user, c.pass); err == nil {
			t.Errorf("Login(%q, %q, %q): no error", c.reg, c.user, c.pass)
		}
	}
}

// A 401 says whether pallet had credentials for the registry: none, or
// some that the registry refused.
func TestExplainTellsFoundFromNone(t *testing.T) {
	reg := testregistry.StartWithAuth(t, "alice", "right")
	dockerConfig(t)
	ref, err := name.ParseReference(reg.Host + "/pallet/private:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	push := func() string {
		err := remote.Write(ref, img, regauth.Options(context.Background())...)
		if err == nil {
			t.Fatal("push succeeded")
		}
		return regauth.Explain(err).Error()
	}
	if msg := push(); !strings.Contains(msg, "found none for it") || strings.Contains(msg, "refused the credentials") {
		t.Errorf("no credentials: %s", msg)
	}
	if _, err := regauth.Login(reg.Host, "alice", "wrong"); err != nil {
		t.Fatal(err)
	}
	msg := push()
	if !strings.Contains(msg, "refused the credentials pallet found") {
		t.Errorf("wrong credentials: %s", msg)
	}
	if strings.Contains(msg, "wrong") && strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte("alice:wrong"))) {
		t.Errorf("the message shows the credentials: %s", msg)
	}
	if _, err := regauth.Login(reg.Host, "alice", "right"); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, regauth.Options(context.Background())...); err != nil {
		t.Fatalf("push after login: %v", err)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
