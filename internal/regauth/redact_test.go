package regauth

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A secret carried in a URL's query (an upload session's signed state, a
// pre-signed storage URL's signature) does not reach the message.
func TestRedact(t *testing.T) {
	inner := errors.New(`Patch "http://r.example/v2/app/blobs/uploads/1f2e?_state=DJPGkJAb8e8mb&digest=sha256:ab": connection reset by peer; GET https://s3.example/b?X-Amz-Signature=abc123&X-Amz-Credential=AKIA%2F1&x=1`)
	err := Redact(fmt.Errorf("push: %w", inner))
	for _, secret := range []string{"DJPGkJAb8e8mb", "abc123", "AKIA"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q in %s", secret, err)
		}
	}
	for _, kept := range []string{"_state=REDACTED", "digest=sha256:ab", "x=1", "connection reset by peer"} {
		if !strings.Contains(err.Error(), kept) {
			t.Errorf("%q lost from %s", kept, err)
		}
	}
	if !errors.Is(err, inner) {
		t.Error("the redacted error does not wrap the original")
	}
	if plain := errors.New("nothing secret"); Redact(plain) != plain {
		t.Error("an error without secrets was rewrapped")
	}
}
