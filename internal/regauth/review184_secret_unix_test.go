//go:build unix

package regauth

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// A failing helper's stderr is quoted for its reason, but a secret it
// printed there (its answer, or the credentials it was given to keep,
// echoed back) is not: the error goes to CI logs.
func TestReview184HelperSecretNotQuoted(t *testing.T) {
	const secret = "s3cret-not-to-be-seen"
	reg, err := name.NewRegistry("registry.example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, body string
		call       func() error
	}{
		{"get-stderr", `cat >/dev/null; a='{"Username":"alice","Secret":"` + secret + `"}'; echo "$a"; echo "debug: answered $a" >&2; exit 1`,
			func() error { _, err := keychain{}.ResolveContext(context.Background(), reg); return err }},
		{"store-stderr", `echo "cannot parse: $(cat)" >&2; exit 1`,
			func() error { _, err := Login("registry.example.com", "alice", secret); return err }},
		{"store-stdout", `echo "cannot parse: $(cat)"; exit 1`,
			func() error { _, err := Login("registry.example.com", "alice", secret); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			helperConfig(t, c.name, c.body)
			err := c.call()
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "docker-credential-"+c.name) || !strings.Contains(err.Error(), "exit status 1") {
				t.Errorf("error does not name the helper and its failure: %v", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the secret: %v", err)
			}
		})
	}
}
