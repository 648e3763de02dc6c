package regauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	dockercreds "github.com/docker/cli/cli/config/credentials"
	"github.com/docker/cli/cli/config/types"
	helpercreds "github.com/docker/docker-credential-helpers/credentials"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// maxHelperOutput bounds what a credential helper may print: an answer
// is a short JSON object, and docker's client reads it all into memory
// however long it goes.
const maxHelperOutput = 1 << 20

// maxHelperStderr bounds the helper's complaint kept for an error.
const maxHelperStderr = 4 << 10

// helperWaitDelay is how long a killed helper's children may keep its
// output open: a shell script's sleep holds the pipe after the shell is
// gone, and waiting for it to close waited as long as the sleep.
const helperWaitDelay = time.Second

// helperMu runs one helper at a time, as the default keychain did: a
// helper that asks for a passphrase (pass, through gpg) would ask once
// for each push or pull going on together.
var helperMu sync.Mutex

// keychain reads the docker config as go-containerregistry's default
// keychain does (the same files, the same keys, DOCKER_AUTH_CONFIG over
// them), but runs the credential helpers itself, bounded: the default
// keychain runs them through docker's client with no bound in time or
// output, so a helper that hung (a locked keyring waiting on a prompt)
// held the build for ever, and every later lookup behind the keychain's
// lock with it.
type keychain struct{}

func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), r)
}

func (keychain) ResolveContext(ctx context.Context, target authn.Resource) (authn.Authenticator, error) {
	cf, err := loadDockerConfig()
	if err != nil || cf == nil {
		return authn.Anonymous, err
	}
	var empty types.AuthConfig
	for _, key := range []string{target.String(), target.RegistryStr()} {
		if key == name.DefaultRegistry {
			key = authn.DefaultAuthKey
		}
		cfg, err := authConfig(ctx, cf, key)
		if err != nil {
			return nil, err
		}
		cfg.ServerAddress = ""
		if cfg != empty {
			return authn.FromConfig(authn.AuthConfig{
				Username:      cfg.Username,
				Password:      cfg.Password,
				Auth:          cfg.Auth,
				IdentityToken: cfg.IdentityToken,
				RegistryToken: cfg.RegistryToken,
			}), nil
		}
	}
	return authn.Anonymous, nil
}

// loadDockerConfig finds the config go-containerregistry's default
// keychain reads: ~/.docker/config.json or $DOCKER_CONFIG's, else
// $REGISTRY_AUTH_FILE, else Podman's auth.json; nil when there is none.
func loadDockerConfig() (*configfile.ConfigFile, error) {
	found := false
	home, err := os.UserHomeDir()
	if err == nil {
		found = isFile(filepath.Join(home, ".docker", "config.json"))
	}
	if !found && os.Getenv("DOCKER_CONFIG") != "" {
		found = isFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"))
	}
	if found {
		return config.Load(os.Getenv("DOCKER_CONFIG"))
	}
	configDir := os.Getenv("XDG_CONFIG_HOME")
	if configDir == "" && home != "" {
		configDir = filepath.Join(home, ".config")
	}
	podman := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "containers/auth.json")
	if (os.Getenv("XDG_RUNTIME_DIR") == "" || !isFile(podman)) && configDir != "" {
		podman = filepath.Join(configDir, "containers/auth.json")
	}
	for _, p := range []string{filepath.Clean(os.Getenv("REGISTRY_AUTH_FILE")), filepath.Clean(podman)} {
		if !isFile(p) {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return config.LoadFromReader(f)
	}
	return nil, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// authConfig is what docker reads for key: without a helper, the config's
// own answer; with one, DOCKER_AUTH_CONFIG's entry if it has one, else
// the helper's answer over the config's entry (as docker's native store
// gives it).
func authConfig(ctx context.Context, cf *configfile.ConfigFile, key string) (types.AuthConfig, error) {
	helper := cf.CredentialsStore
	if h, ok := cf.CredentialHelpers[key]; ok {
		helper = h
	}
	if helper == "" {
		return cf.GetAuthConfig(key)
	}
	// The config without its helpers and entries is DOCKER_AUTH_CONFIG's
	// answer alone, which docker takes over the helper's.
	env := *cf
	env.CredentialsStore, env.CredentialHelpers, env.AuthConfigs = "", nil, map[string]types.AuthConfig{}
	if a, err := env.GetAuthConfig(key); err == nil {
		a.ServerAddress = ""
		if a != (types.AuthConfig{}) {
			return a, nil
		}
	}
	auth, _ := dockercreds.NewFileStore(cf).Get(key)
	creds, err := helperGet(ctx, helper, key)
	if err != nil {
		return types.AuthConfig{}, err
	}
	auth.Username, auth.Password, auth.IdentityToken = "", "", ""
	if creds != nil {
		// docker's native store marks an identity token so.
		if creds.Username == "<token>" {
			auth.IdentityToken = creds.Secret
		} else {
			auth.Username, auth.Password = creds.Username, creds.Secret
		}
	}
	return auth, nil
}

// helperRun runs docker-credential-helper ACTION with input on its
// stdin, as docker's client does, within the context's bounds and
// maxHelperOutput. It returns what the helper printed, and when it
// failed (notFound aside), an error naming it, the action's key and
// what it printed to stderr, without secret or any secret it answered
// with; its stdout is for the caller to say or not.
// notFound is the helper's own answer that it has nothing for the key.
func helperRun(ctx context.Context, helper, action, key string, input io.Reader, secret string) (out []byte, notFound bool, err error) {
	helperMu.Lock()
	defer helperMu.Unlock()
	prog := "docker-credential-" + helper
	// The helper's whole run is one wait for its answer: the stall bound,
	// or one request's whole bound (--download-timeout) where that is
	// shorter, as for inspect and sbom, which take only that.
	t := BoundsOf(ctx).withDefaults()
	limit, bound := t.Stall, "the stall bound, limits.stall, --stall-timeout"
	if t.Total < limit {
		limit, bound = t.Total, "one registry request's bound, limits.download-timeout, --download-timeout"
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, action)
	cmd.Stdin = input
	// An answer past the bound ends the helper at once: one printing
	// without end would otherwise run to the stall bound.
	stdout := &bounded.Output{Max: maxHelperOutput, OnOver: cancel}
	stderr := &bounded.Output{Max: maxHelperStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = helperWaitDelay
	// A helper that exited 0 has answered, though a child it started (an
	// agent) may still hold its output open.
	runErr := bounded.Answered(cmd, cmd.Run())
	out = stdout.Bytes()
	// A helper's debugging may echo the credentials it was given or
	// answered with, and the error goes to CI logs.
	secrets := []string{secret}
	var answered helpercreds.Credentials
	if json.NewDecoder(bytes.NewReader(out)).Decode(&answered) == nil {
		secrets = append(secrets, answered.Secret)
	}
	fail := func(what string) error {
		if s := hideSecrets(strings.TrimSpace(stderr.String()), secrets...); s != "" {
			what += ": " + s
		}
		return fmt.Errorf("credentials for %s: credential helper %s %s: %s", key, prog, action, what)
	}
	switch {
	case stdout.Over():
		return nil, false, fail(fmt.Sprintf("printed over the %d bytes of an answer", maxHelperOutput))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, false, fail(fmt.Sprintf("gave no answer in %s (%s)", limit, bound))
	case runErr != nil && helpercreds.IsErrCredentialsNotFoundMessage(string(out)):
		return out, true, nil
	case runErr != nil:
		return out, false, fail(runErr.Error())
	}
	return out, false, nil
}

// helperGet is the credentials the helper keeps for key; nil when it
// has none. What it printed on failure is left out of the error: it may
// be the credentials.
func helperGet(ctx context.Context, helper, key string) (*helpercreds.Credentials, error) {
	out, notFound, err := helperRun(ctx, helper, helpercreds.ActionGet, key, strings.NewReader(key), "")
	if err != nil || notFound {
		return nil, err
	}
	// Docker decodes the first JSON value and leaves what follows, so a
	// helper that prints a line after its answer works for docker.
	var creds helpercreds.Credentials
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&creds); err != nil {
		return nil, fmt.Errorf("credentials for %s: credential helper docker-credential-%s get: its answer is not JSON credentials: %w", key, helper, err)
	}
	return &creds, nil
}

// helperStore gives the helper creds to keep. A helper says why it
// failed on its stdout, which is said with the error.
func helperStore(ctx context.Context, helper string, creds *helpercreds.Credentials) error {
	data, err := json.Marshal(creds)
	if err != nil {
		return err
	}
	out, _, err := helperRun(ctx, helper, helpercreds.ActionStore, creds.ServerURL, bytes.NewReader(data), creds.Secret)
	return withOutput(err, []byte(hideSecrets(string(out), creds.Secret)))
}

// helperErase has the helper forget key, and says whether it had it.
func helperErase(ctx context.Context, helper, key string) (bool, error) {
	out, notFound, err := helperRun(ctx, helper, helpercreds.ActionErase, key, strings.NewReader(key), "")
	return err == nil && !notFound, withOutput(err, out)
}

// hideSecrets is s without the secrets in it, as written or as JSON
// escapes them.
func hideSecrets(s string, secrets ...string) string {
	for _, x := range secrets {
		if x == "" {
			continue
		}
		s = strings.ReplaceAll(s, x, "[secret]")
		if q, err := json.Marshal(x); err == nil {
			s = strings.ReplaceAll(s, string(q[1:len(q)-1]), "[secret]")
		}
	}
	return s
}

// withOutput adds to err what the helper printed, its word on why.
func withOutput(err error, out []byte) error {
	if s := strings.TrimSpace(string(out)); err != nil && s != "" {
		return fmt.Errorf("%w: %s", err, s)
	}
	return err
}
