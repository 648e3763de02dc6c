package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// pallet fetch downloads and unpacks within the recipe's limits, as a
// build of it would, a flag winning over them: it took the defaults, and
// filled a mirror with what the build then refused.
func TestFetchHonoursRecipeLimits(t *testing.T) {
	archive := fixture.TarGz([]fixture.File{{Name: "big", Content: strings.Repeat("x", 64<<10), Mode: 0o644}})
	srv := fixture.Serve(t, map[string][]byte{"/a.tgz": archive})
	dir := t.TempDir()
	write := func(limits string) string {
		file := filepath.Join(dir, "pallet.yaml")
		writeFile(t, file, fmt.Sprintf(`version: 1
limits:
  %s
artifacts:
  a:
    url: {url: %s/a.tgz, sha256: %s, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, dest: /a/}
`, limits, srv.URL, fixture.SHA256(archive)))
		return file
	}
	for _, tc := range []struct{ limits, want string }{
		{"download: 100B", "limit of 100 bytes"},
		{"extract: 16KiB", "16384 bytes; if the archive is what you expect, raise the limit with --max-extract, or limits.extract in a recipe"},
	} {
		mirror := filepath.Join(t.TempDir(), "mirror")
		_, err := pallet(t, "fetch", "-q", "-f", write(tc.limits), "--mirror", mirror)
		if err == nil || !strings.Contains(err.Error(), "pallet.yaml:6:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fetch within %s: %v, want it refused at pallet.yaml:6 saying %q", tc.limits, err, tc.want)
		}
		// Named once: the unpacking's error named it, and the mirror's
		// wrapping named it again.
		if err != nil && strings.Count(err.Error(), "artifact a (") != 1 {
			t.Errorf("fetch within %s: %v, want the artifact named once", tc.limits, err)
		}
		if ents, _ := os.ReadDir(filepath.Join(mirror, "sha256")); tc.limits == "download: 100B" && len(ents) != 0 {
			t.Errorf("fetch within %s kept %d file(s)", tc.limits, len(ents))
		}
	}
	mustPallet(t, "fetch", "-q", "-f", write("download: 100B"), "--max-download", "1MiB", "--mirror", filepath.Join(t.TempDir(), "mirror"))
}
