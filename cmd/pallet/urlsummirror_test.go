package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A --mirror-url that serves other bytes under a pin's digest is a
// damaged mirror, not a stale pin: the recipe's sha256 is what upstream
// serves, and pallet lock --update, which asks upstream, would find it
// again. The mismatch is said at the pin's line all the same, without
// sending the user to re-pin.
func TestURLMismatchFromMirrorSaysNoLock(t *testing.T) {
	tool := []byte("the tool\n")
	sum := fixture.SHA256(tool)
	upstream := fixture.Serve(t, map[string][]byte{"/tool": tool})
	mirror := fixture.Serve(t, map[string][]byte{"/sha256/" + sum: []byte("not the tool\n")})
	recipe := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, recipe, fmt.Sprintf(`version: 1
artifacts:
  tool:
    url:
      url: %s/tool
      sha256: %s
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /bin/tool}
`, upstream.URL, sum))
	_, err := pallet(t, "build", "-q", "-f", recipe, "--no-cache", "--mirror-url", mirror.URL, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	switch {
	case err == nil:
		t.Fatal("a mirror's download that does not match its sha256 was accepted")
	case !strings.Contains(err.Error(), "sha256 mismatch") || !strings.Contains(err.Error(), mirror.URL):
		t.Fatalf("not the mirror's mismatch:\n%v", err)
	case !strings.Contains(err.Error(), fmt.Sprintf("pallet.yaml:%d:", lineOf(t, recipe, "sha256: "+sum))):
		t.Errorf("the error is not at the sha256 pin's line:\n%v", err)
	case strings.Contains(err.Error(), "pallet lock"):
		t.Errorf("a damaged mirror sends the user to re-pin a pin upstream agrees with:\n%v", err)
	case !strings.Contains(err.Error(), "the mirror's copy (--mirror-url), which is damaged"):
		t.Errorf("the error does not say the mirror is at fault:\n%v", err)
	}
	// What the advice would have led to: lock finds the pin as it is.
	mustPallet(t, "lock", "-q", "-f", recipe, "--update")
	if !strings.Contains(readFileString(t, recipe), "sha256: "+sum) {
		t.Errorf("lock --update changed a pin upstream agrees with:\n%s", readFileString(t, recipe))
	}
}
