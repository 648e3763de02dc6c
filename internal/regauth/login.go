package regauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	dockercreds "github.com/docker/cli/cli/config/credentials"
	helpercreds "github.com/docker/docker-credential-helpers/credentials"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// ConfigFile is the docker config credentials are read from and written
// to, as docker and crane have it: $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json.
func ConfigFile() (string, error) {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the docker config: %w", err)
	}
	return filepath.Join(home, ".docker", "config.json"), nil
}

// authKey is the key of registry's entry in the docker config: its host
// ("registry.example.com:5000"), or Docker Hub's historical URL. It
// accepts what docker login does: a host, or a URL with scheme and path.
func authKey(registry string) (string, error) {
	host := dockercreds.ConvertToHostname(strings.TrimSpace(registry))
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil || host == "" {
		return "", fmt.Errorf("registry %q: want a registry host such as registry.example.com:5000", registry)
	}
	if reg.RegistryStr() == name.DefaultRegistry {
		return authn.DefaultAuthKey, nil
	}
	return reg.RegistryStr(), nil
}

// configFile is the docker config as read for an update: every field is
// kept as it was, whether pallet knows it or not.
type configFile struct {
	path   string
	fields map[string]json.RawMessage
	auths  map[string]json.RawMessage
}

// maxConfig bounds the docker config read for an update; one with a
// credential for each of thousands of registries is well under it.
const maxConfig = 16 << 20

func readConfig() (*configFile, error) {
	p, err := ConfigFile()
	if err != nil {
		return nil, err
	}
	// A config that is a link (to a mounted secret, a dotfiles checkout)
	// stays one: the file it leads to is the one updated.
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	c := &configFile{path: p, fields: map[string]json.RawMessage{}, auths: map[string]json.RawMessage{}}
	data, err := bounded.ReadFile(p, maxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the docker config: %w", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(data, &c.fields); err != nil {
		return nil, fmt.Errorf("docker config %s: %w", p, err)
	}
	if c.fields == nil { // the file says null
		c.fields = map[string]json.RawMessage{}
	}
	if raw, ok := c.fields["auths"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c.auths); err != nil {
			return nil, fmt.Errorf("docker config %s: auths: %w", p, err)
		}
		if c.auths == nil {
			c.auths = map[string]json.RawMessage{}
		}
	}
	return c, nil
}

// helper is the credential helper the config names for key
// (credHelpers, else credsStore), as docker picks it; "" for none.
func (c *configFile) helper(key string) (string, error) {
	var helpers map[string]string
	if raw, ok := c.fields["credHelpers"]; ok {
		if err := json.Unmarshal(raw, &helpers); err != nil {
			return "", fmt.Errorf("docker config %s: credHelpers: %w", c.path, err)
		}
	}
	if h, ok := helpers[key]; ok {
		return h, nil
	}
	var store string
	if raw, ok := c.fields["credsStore"]; ok {
		if err := json.Unmarshal(raw, &store); err != nil {
			return "", fmt.Errorf("docker config %s: credsStore: %w", c.path, err)
		}
	}
	return store, nil
}

// write replaces the config in one step, readable by its owner only.
func (c *configFile) write() error {
	auths, err := json.Marshal(c.auths)
	if err != nil {
		return err
	}
	c.fields["auths"] = auths
	data, err := json.MarshalIndent(c.fields, "", "\t")
	if err != nil {
		return err
	}
	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing the docker config: %w", err)
	}
	// os.CreateTemp makes the file 0600 whatever the umask: the
	// credentials are never readable by others, not even for a moment.
	tmp, err := os.CreateTemp(dir, ".config.json.new-*")
	if err != nil {
		return fmt.Errorf("writing the docker config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the docker config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the docker config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the docker config: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		return fmt.Errorf("writing the docker config: %w", err)
	}
	return nil
}

// sameRegistry lists the auths keys that docker reads as key's: the key
// itself, and older forms of it ("https://host/v1/").
func (c *configFile) sameRegistry(key string) []string {
	host := dockercreds.ConvertToHostname(key)
	var out []string
	for k := range c.auths {
		if k == key || dockercreds.ConvertToHostname(k) == host {
			out = append(out, k)
		}
	}
	return out
}

// Login stores user and password for registry where docker, crane and
// pallet read them: through the credential helper the docker config names
// for that registry, else in the config's auths (base64, as docker writes
// them). Other entries and fields of the config are kept; the file is
// replaced in one step and is readable by its owner only. Nothing is sent
// to the registry. It returns where the credentials went.
func Login(registry, user, password string) (string, error) {
	return login(context.Background(), registry, user, password)
}

// login is Login with the bounds of ctx on the credential helper.
func login(ctx context.Context, registry, user, password string) (string, error) {
	if user == "" {
		return "", errors.New("login: a user name is needed")
	}
	if password == "" {
		return "", errors.New("login: the password is empty")
	}
	key, err := authKey(registry)
	if err != nil {
		return "", err
	}
	c, err := readConfig()
	if err != nil {
		return "", err
	}
	h, err := c.helper(key)
	if err != nil {
		return "", err
	}
	if h != "" {
		if err := helperStore(ctx, h, &helpercreds.Credentials{ServerURL: key, Username: user, Secret: password}); err != nil {
			return "", fmt.Errorf("login %s: %w", key, err)
		}
		return "credential helper docker-credential-" + h, nil
	}
	entry := map[string]json.RawMessage{}
	// Fields docker keeps beside auth (email, identitytoken...) of an
	// earlier login stay, except the token, which the password replaces.
	if old, ok := c.auths[key]; ok {
		_ = json.Unmarshal(old, &entry)
	}
	delete(entry, "identitytoken")
	delete(entry, "username")
	delete(entry, "password")
	enc, _ := json.Marshal(base64.StdEncoding.EncodeToString([]byte(user + ":" + password)))
	entry["auth"] = enc
	data, err := json.Marshal(entry)
	if err != nil {
		return "", err
	}
	c.auths[key] = data
	if err := c.write(); err != nil {
		return "", err
	}
	return c.path, nil
}

// Logout removes what Login stored for registry: the config's entries
// for it (in any form docker reads as that registry) and, when the config
// names a credential helper for it, the helper's. It reports whether
// there was anything to remove.
func Logout(registry string) (bool, error) {
	return logout(context.Background(), registry)
}

// logout is Logout with the bounds of ctx on the credential helper.
func logout(ctx context.Context, registry string) (bool, error) {
	key, err := authKey(registry)
	if err != nil {
		return false, err
	}
	c, err := readConfig()
	if err != nil {
		return false, err
	}
	removed := false
	if h, err := c.helper(key); err != nil {
		return false, err
	} else if h != "" {
		had, err := helperErase(ctx, h, key)
		if err != nil {
			return false, fmt.Errorf("logout %s: %w", key, err)
		}
		removed = had
	}
	keys := c.sameRegistry(key)
	for _, k := range keys {
		delete(c.auths, k)
	}
	if len(keys) > 0 {
		if err := c.write(); err != nil {
			return false, err
		}
		removed = true
	}
	return removed, nil
}
