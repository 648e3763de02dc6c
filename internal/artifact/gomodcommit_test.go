package artifact_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// A gomod commit the module proxy contradicts is the commit's fault, not
// the section's: the error is blamed on the commit field, so that the
// recipe reports it at the commit: line, as a wrong sum is at sum:, and
// says how to re-pin it.
func TestGoModuleCommitMismatchBlamesCommit(t *testing.T) {
	p := newModProxy(t)
	sum := p.addHello(t, "")
	origin := strings.Repeat("ab", 20)
	p.mu.Lock()
	p.files[helloPath+"/@v/v1.0.0.info"] = []byte(`{"Version":"v1.0.0","Time":"2024-01-02T03:04:05Z","Origin":{"VCS":"git","Hash":"` + origin + `"}}`)
	p.mu.Unlock()
	req := helloRequest(t, sum)
	req.Kind.(*artifact.GoModule).Commit = strings.Repeat("cd", 20)
	_, err := fetcher(t).Fetch(context.Background(), req, t.TempDir())
	var fe *artifact.FieldError
	if !errors.As(err, &fe) || fe.Field != "commit" {
		t.Fatalf("got %v (%T), want an error blamed on the commit field", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "made from git "+origin) || !strings.Contains(msg, "pallet lock --update") {
		t.Errorf("error %q does not name the proxy's commit and how to re-pin", msg)
	}
}
