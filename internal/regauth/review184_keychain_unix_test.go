//go:build unix

package regauth

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// The bounded keychain replaces go-containerregistry's default one, and a
// user's docker config must give the same credentials through either:
// each case runs both on the same files, environment and helpers and
// wants the same answer, or both to fail.
func TestReview184KeychainAsDefault(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	// Each helper answers u-KEY for the key it was asked, so which key
	// docker asked is in the answer; "none" has nothing for any key.
	helpers := map[string]string{
		"a":     `key=$(cat); printf '{"ServerURL":"%s","Username":"a-%s","Secret":"pa"}' "$key" "$key"`,
		"b":     `key=$(cat); printf '{"ServerURL":"%s","Username":"b-%s","Secret":"pb"}' "$key" "$key"`,
		"tok":   `cat >/dev/null; printf '{"Username":"<token>","Secret":"idtok"}'`,
		"none":  `cat >/dev/null; echo 'credentials not found in native keychain'; exit 1`,
		"trail": `cat >/dev/null; printf '{"Username":"t","Secret":"pt"}\nhelper v1.2 done\n'`,
		"path":  `cat >/dev/null; printf '{"Username":"%s","Secret":"%s"}' "$(basename "$(command -v sh)")" "$HOME"`,
	}
	for _, c := range []struct {
		name   string
		docker string            // $DOCKER_CONFIG/config.json; "" for none
		home   string            // $HOME/.docker/config.json; "" for none
		files  map[string]string // other files, under the case's root
		env    map[string]string // ROOT in a value is the case's root
		ref    string
	}{
		{name: "hub auth under the v1 key", docker: `{"auths":{"https://index.docker.io/v1/":{"auth":"` + b64("u:p") + `"}}}`, ref: "ubuntu"},
		{name: "hub auth under index.docker.io", docker: `{"auths":{"index.docker.io":{"auth":"` + b64("u:p") + `"}}}`, ref: "ubuntu"},
		{name: "hub auth under docker.io", docker: `{"auths":{"docker.io":{"auth":"` + b64("u:p") + `"}}}`, ref: "docker.io/library/ubuntu"},
		{name: "hub auth under https://docker.io", docker: `{"auths":{"https://docker.io":{"auth":"` + b64("u:p") + `"}}}`, ref: "ubuntu"},
		{name: "port", docker: `{"auths":{"localhost:5000":{"auth":"` + b64("u:p") + `"}}}`, ref: "localhost:5000/x/y"},
		{name: "port under a URL", docker: `{"auths":{"http://localhost:5000/v2/":{"auth":"` + b64("u:p") + `"}}}`, ref: "localhost:5000/x/y"},
		{name: "path prefix", docker: `{"auths":{"ghcr.io/org":{"auth":"` + b64("org:p") + `"},"ghcr.io":{"auth":"` + b64("all:p") + `"}}}`, ref: "ghcr.io/org/x"},
		{name: "full repository key", docker: `{"auths":{"ghcr.io/org/x":{"auth":"` + b64("org:p") + `"},"ghcr.io":{"auth":"` + b64("all:p") + `"}}}`, ref: "ghcr.io/org/x"},
		{name: "username and password", docker: `{"auths":{"ghcr.io":{"username":"u","password":"p"}}}`, ref: "ghcr.io/org/x"},
		{name: "identitytoken", docker: `{"auths":{"ghcr.io":{"auth":"` + b64("u:p") + `","identitytoken":"it"}}}`, ref: "ghcr.io/org/x"},
		{name: "registrytoken", docker: `{"auths":{"ghcr.io":{"registrytoken":"rt"}}}`, ref: "ghcr.io/org/x"},
		{name: "credsStore", docker: `{"credsStore":"a"}`, ref: "ghcr.io/org/x"},
		{name: "credsStore for the hub", docker: `{"credsStore":"a"}`, ref: "ubuntu"},
		{name: "credHelpers over credsStore", docker: `{"credsStore":"a","credHelpers":{"ghcr.io":"b"}}`, ref: "ghcr.io/org/x"},
		{name: "credHelpers for the full repository", docker: `{"credsStore":"none","credHelpers":{"ghcr.io/org/x":"b"}}`, ref: "ghcr.io/org/x"},
		{name: "credHelpers for the hub", docker: `{"credHelpers":{"https://index.docker.io/v1/":"b"}}`, ref: "ubuntu"},
		{name: "credHelpers for the hub as docker.io", docker: `{"credHelpers":{"docker.io":"b"}}`, ref: "ubuntu"},
		{name: "credHelpers empty over credsStore", docker: `{"credsStore":"a","credHelpers":{"ghcr.io":""},"auths":{"ghcr.io":{"auth":"` + b64("u:p") + `"}}}`, ref: "ghcr.io/org/x"},
		{name: "Docker Desktop's config", docker: `{"auths":{"https://index.docker.io/v1/":{},"ghcr.io":{}},"credsStore":"b","currentContext":"desktop-linux"}`, ref: "ubuntu"},
		{name: "helper with nothing over auths", docker: `{"credsStore":"none","auths":{"ghcr.io":{"auth":"` + b64("u:p") + `","registrytoken":"rt"}}}`, ref: "ghcr.io/org/x"},
		{name: "helper over auths", docker: `{"credsStore":"a","auths":{"ghcr.io":{"auth":"` + b64("u:p") + `","identitytoken":"it"}}}`, ref: "ghcr.io/org/x"},
		{name: "helper token", docker: `{"credsStore":"tok"}`, ref: "ghcr.io/org/x"},
		{name: "helper answer with a trailing line", docker: `{"credsStore":"trail"}`, ref: "ghcr.io/org/x"},
		{name: "helper environment", docker: `{"credsStore":"path"}`, ref: "ghcr.io/org/x"},
		{name: "helper missing", docker: `{"credsStore":"missing"}`, ref: "ghcr.io/org/x"},
		{name: "DOCKER_AUTH_CONFIG over auths", docker: `{"auths":{"ghcr.io":{"auth":"` + b64("u:p") + `"}}}`, env: map[string]string{"DOCKER_AUTH_CONFIG": `{"auths":{"ghcr.io":{"auth":"` + b64("env:p") + `"}}}`}, ref: "ghcr.io/org/x"},
		{name: "DOCKER_AUTH_CONFIG over a helper", docker: `{"credsStore":"a"}`, env: map[string]string{"DOCKER_AUTH_CONFIG": `{"auths":{"ghcr.io":{"auth":"` + b64("env:p") + `"}}}`}, ref: "ghcr.io/org/x"},
		{name: "DOCKER_AUTH_CONFIG for another registry", docker: `{"credsStore":"a"}`, env: map[string]string{"DOCKER_AUTH_CONFIG": `{"auths":{"quay.io":{"auth":"` + b64("env:p") + `"}}}`}, ref: "ghcr.io/org/x"},
		{name: "DOCKER_AUTH_CONFIG for the hub", docker: `{"credsStore":"a"}`, env: map[string]string{"DOCKER_AUTH_CONFIG": `{"auths":{"https://index.docker.io/v1/":{"auth":"` + b64("env:p") + `"}}}`}, ref: "ubuntu"},
		{name: "DOCKER_AUTH_CONFIG bad", docker: `{"credsStore":"a"}`, env: map[string]string{"DOCKER_AUTH_CONFIG": `{"auths":{"ghcr.io":{}}}`}, ref: "ghcr.io/org/x"},
		{name: "DOCKER_AUTH_CONFIG with no config file", env: map[string]string{"DOCKER_AUTH_CONFIG": `{"auths":{"ghcr.io":{"auth":"` + b64("env:p") + `"}}}`}, ref: "ghcr.io/org/x"},
		{name: "home config over DOCKER_CONFIG", home: `{"auths":{"ghcr.io":{"auth":"` + b64("home:p") + `"}}}`, docker: `{"auths":{"ghcr.io":{"auth":"` + b64("dc:p") + `"}}}`, ref: "ghcr.io/org/x"},
		{name: "home config only", home: `{"auths":{"ghcr.io":{"auth":"` + b64("home:p") + `"}}}`, ref: "ghcr.io/org/x"},
		{name: "REGISTRY_AUTH_FILE", files: map[string]string{"ra.json": `{"auths":{"ghcr.io":{"auth":"` + b64("ra:p") + `"}}}`}, env: map[string]string{"REGISTRY_AUTH_FILE": "ROOT/ra.json"}, ref: "ghcr.io/org/x"},
		{name: "REGISTRY_AUTH_FILE under a docker config", docker: `{}`, files: map[string]string{"ra.json": `{"auths":{"ghcr.io":{"auth":"` + b64("ra:p") + `"}}}`}, env: map[string]string{"REGISTRY_AUTH_FILE": "ROOT/ra.json"}, ref: "ghcr.io/org/x"},
		{name: "podman runtime", files: map[string]string{"run/containers/auth.json": `{"auths":{"ghcr.io":{"auth":"` + b64("run:p") + `"}}}`}, env: map[string]string{"XDG_RUNTIME_DIR": "ROOT/run"}, ref: "ghcr.io/org/x"},
		{name: "podman config", files: map[string]string{"cfg/containers/auth.json": `{"auths":{"ghcr.io":{"auth":"` + b64("cfg:p") + `"}}}`}, env: map[string]string{"XDG_CONFIG_HOME": "ROOT/cfg", "XDG_RUNTIME_DIR": "ROOT/run"}, ref: "ghcr.io/org/x"},
		{name: "config not JSON", docker: `{"auths":`, ref: "ghcr.io/org/x"},
		{name: "auth not base64", docker: `{"auths":{"ghcr.io":{"auth":"%%%"}}}`, ref: "ghcr.io/org/x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			home := filepath.Join(root, "home")
			dc := filepath.Join(root, "dc")
			bin := filepath.Join(root, "bin")
			for _, d := range []string{filepath.Join(home, ".docker"), dc, bin} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			files := map[string]string{}
			for p, s := range c.files {
				files[filepath.Join(root, p)] = s
			}
			if c.docker != "" {
				files[filepath.Join(dc, "config.json")] = c.docker
			}
			if c.home != "" {
				files[filepath.Join(home, ".docker", "config.json")] = c.home
			}
			for h, body := range helpers {
				files[filepath.Join(bin, "docker-credential-"+h)] = "#!/bin/sh\n" + body + "\n"
			}
			for p, s := range files {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("HOME", home)
			t.Setenv("DOCKER_CONFIG", dc)
			for _, k := range []string{"REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "DOCKER_AUTH_CONFIG"} {
				t.Setenv(k, "")
			}
			for k, v := range c.env {
				t.Setenv(k, strings.ReplaceAll(v, "ROOT", root))
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			ref, err := name.ParseReference(c.ref)
			if err != nil {
				t.Fatal(err)
			}
			resolve := func(kc authn.Keychain) (*authn.AuthConfig, error) {
				a, err := authn.Resolve(context.Background(), kc, ref.Context())
				if err != nil {
					return nil, err
				}
				return authn.Authorization(context.Background(), a)
			}
			want, wantErr := resolve(authn.DefaultKeychain)
			got, gotErr := resolve(keychain{})
			t.Logf("default: %+v, %v; pallet: %+v, %v", want, wantErr, got, gotErr)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("the default keychain's error is %v, pallet's %v", wantErr, gotErr)
			}
			if wantErr == nil && *got != *want {
				t.Errorf("pallet's keychain gives %+v, the default %+v", *got, *want)
			}
		})
	}
}
