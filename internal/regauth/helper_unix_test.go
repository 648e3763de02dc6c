//go:build unix

package regauth_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/testregistry"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// A credential helper the docker config names is a program pallet runs
// for every registry call: one that hangs, floods its output, answers
// garbage or fails is said naming it, within the stall bound and without
// the secret it may have printed, and one that answers gets its
// credentials used. The helpers are shell scripts on PATH, as a real one
// is found.
func TestCredentialHelperBounded(t *testing.T) {
	const user, pass = "alice", "s3cret-not-to-be-seen"
	reg := testregistry.StartWithAuth(t, user, pass)
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	const stall = time.Second
	for _, c := range []struct {
		name, script string
		// want are what the error must say; "" wants none.
		want []string
	}{
		{"answers", `cat >/dev/null; printf '{"ServerURL":"%s","Username":"` + user + `","Secret":"` + pass + `"}' "$2"`, nil},
		// The sleep is the shell's child and keeps the output pipe open
		// after the shell is killed; the test ends it (its pid in
		// $PIDFILE).
		{"hangs", `cat >/dev/null; sleep 600 & echo $! > "$PIDFILE"; wait`, []string{"docker-credential-hangs", "gave no answer"}},
		{"floods", "cat >/dev/null; head -c 67108864 /dev/zero", []string{"docker-credential-floods", "over"}},
		{"garbage", "cat >/dev/null; echo 'this is not JSON'", []string{"docker-credential-garbage"}},
		{"fails", `cat >/dev/null; echo '{"Username":"` + user + `","Secret":"` + pass + `"}'; echo 'keyring locked' >&2; exit 3`, []string{"docker-credential-fails", "exit status 3", "keyring locked"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := dockerConfig(t)
			bin := t.TempDir()
			writeFile(t, filepath.Join(bin, "docker-credential-"+c.name), "#!/bin/sh\n"+c.script+"\n", 0o755)
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			pidfile := filepath.Join(t.TempDir(), "pid")
			t.Setenv("PIDFILE", pidfile)
			t.Cleanup(func() {
				if data, err := os.ReadFile(pidfile); err == nil {
					if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, `{"credHelpers": {"`+reg.Host+`": "`+c.name+`"}}`, 0o600)
			ref, err := name.ParseReference(reg.Host + "/helper/" + c.name + ":t")
			if err != nil {
				t.Fatal(err)
			}
			ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: stall}})
			done := make(chan error, 1)
			go func() { done <- remote.Write(ref, img, regauth.Options(ctx)...) }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the push is still waiting on docker-credential-%s after 30s; the stall bound is %s", c.name, stall)
			}
			if c.want == nil {
				if err != nil {
					t.Fatalf("push with the helper's credentials: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("the push succeeded")
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q: %s", w, msg)
				}
			}
			t.Log(msg)
			if strings.Contains(msg, pass) {
				t.Errorf("error shows the secret: %s", msg)
			}
			if len(msg) > 8<<10 {
				t.Errorf("error of %d bytes", len(msg))
			}
		})
	}
}

// credsStore names the helper for every registry, and docker reads
// DOCKER_AUTH_CONFIG's entry over a helper's; a helper that has no
// credentials leaves the call anonymous, as for docker.
func TestCredentialsStoreAsDockerReadsIt(t *testing.T) {
	const user, pass = "alice", "s3cret"
	reg := testregistry.StartWithAuth(t, user, pass)
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := dockerConfig(t)
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	// Wrong credentials for the registry once told to, none before.
	wrong := filepath.Join(t.TempDir(), "wrong")
	writeFile(t, filepath.Join(bin, "docker-credential-store"), `#!/bin/sh
key=$(cat); touch `+marker+`
if [ "$key" = "`+reg.Host+`" ] && [ -e `+wrong+` ]; then echo '{"Username":"bob","Secret":"wrong"}'; exit 0; fi
echo 'credentials not found in native keychain'; exit 1
`, 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, `{"credsStore": "store"}`, 0o600)
	ref, err := name.ParseReference(reg.Host + "/store/x:t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	err = remote.Write(ref, img, regauth.Options(ctx)...)
	if err == nil || !strings.Contains(regauth.Explain(err).Error(), "pallet found none") {
		t.Fatalf("push with a helper that has no credentials: %v", err)
	}
	if _, serr := os.Stat(marker); serr != nil {
		t.Fatalf("the helper was not asked: %v", serr)
	}

	writeFile(t, wrong, "", 0o644)
	err = remote.Write(ref, img, regauth.Options(ctx)...)
	if err == nil || !strings.Contains(regauth.Explain(err).Error(), "refused the credentials") {
		t.Fatalf("push with the helper's wrong credentials: %v", err)
	}

	t.Setenv("DOCKER_AUTH_CONFIG", `{"auths":{"`+reg.Host+`":{"auth":"`+base64.StdEncoding.EncodeToString([]byte(user+":"+pass))+`"}}}`)
	if err := remote.Write(ref, img, regauth.Options(ctx)...); err != nil {
		t.Fatalf("push with DOCKER_AUTH_CONFIG's credentials over the helper's: %v", err)
	}
}
