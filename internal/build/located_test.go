package build

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
)

// Lock's advice goes with a mismatch of the recipe's own URL, however
// the download names it (its credentials redacted), and with no other:
// not a mirror's, nor one with no sha256 line for lock to rewrite.
func TestLocatedSaysLockOnlyForOwnURL(t *testing.T) {
	sum := strings.Repeat("a", 64)
	pin := plan.Pos{File: "pallet.yaml", Line: 6, Col: 15}
	art := func(u string, fields map[string]plan.Pos) *plan.Artifact {
		return &plan.Artifact{Request: artifact.Request{Name: "tool", Kind: &artifact.URL{URL: u, SHA256: sum}}, Pos: plan.Pos{File: "pallet.yaml", Line: 3, Col: 3}, Fields: fields}
	}
	mismatch := func(u string) error {
		return fmt.Errorf("fetch tool: %w", &artifact.MismatchError{URL: u, Expected: sum, Actual: strings.Repeat("b", 64)})
	}
	withPin := map[string]plan.Pos{"sha256": pin}
	for _, tc := range []struct {
		name    string
		a       *plan.Artifact
		err     error
		advised bool
	}{
		{"own url", art("https://example.com/tool", withPin), mismatch("https://example.com/tool"), true},
		{"own url, redacted", art("https://me:secret@example.com/tool", withPin), mismatch("https://me:xxxxx@example.com/tool"), true},
		{"own url, a token as its user", art("https://TOKEN@example.com/tool", withPin), mismatch("https://xxxxx@example.com/tool"), true},
		{"mirror url", art("https://example.com/tool", withPin), mismatch("http://mirror.internal/sha256/" + sum), false},
		{"no sha256 line", art("https://example.com/tool", nil), mismatch("https://example.com/tool"), false},
	} {
		err := located(tc.a, tc.err)
		if got := strings.Contains(err.Error(), "pallet lock --update"); got != tc.advised {
			t.Errorf("%s: %v; want the advice %v", tc.name, err, tc.advised)
		}
		if tc.a.Fields != nil && !strings.HasPrefix(err.Error(), "pallet.yaml:6: ") {
			t.Errorf("%s: %v; want it at the pin, %s", tc.name, err, pin)
		}
	}
}
