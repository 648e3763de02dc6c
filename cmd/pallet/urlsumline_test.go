package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// lineOf is the line of file that reads want, trimmed.
func lineOf(t *testing.T, file, want string) int {
	t.Helper()
	for i, l := range strings.Split(readFileString(t, file), "\n") {
		if strings.TrimSpace(l) == want {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", file, want)
	return 0
}

// A download that does not match a recipe's sha256 is said at the line
// of that pin, its platform's in a map, with pallet lock --update, which
// rewrites that line, as the way on; and it does re-pin it. pallet fetch
// says it as the build does.
func TestURLMismatchAtSha256LineSaysLock(t *testing.T) {
	files := map[string][]byte{"/tool-amd64": []byte("amd64 tool\n"), "/tool-arm64": []byte("arm64 tool\n")}
	srv := fixture.Serve(t, files)
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct{ name, sha256, pin string }{
		{"one digest", "sha256: " + wrong, "sha256: " + wrong},
		{"per platform", fmt.Sprintf("sha256:\n        linux/amd64: %s\n        linux/arm64: %s", fixture.SHA256(files["/tool-amd64"]), wrong), "linux/arm64: " + wrong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recipe := filepath.Join(t.TempDir(), "pallet.yaml")
			writeFile(t, recipe, fmt.Sprintf(`version: 1
artifacts:
  tool:
    url:
      url: %s/tool-{{arch}}
      %s
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: tool, dest: /bin/tool}
`, srv.URL, tc.sha256))
			want := fmt.Sprintf("pallet.yaml:%d:", lineOf(t, recipe, tc.pin))
			_, berr := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
			_, ferr := pallet(t, "fetch", "-q", "-f", recipe, "--mirror", t.TempDir())
			for cmd, err := range map[string]error{"build": berr, "fetch": ferr} {
				switch {
				case err == nil:
					t.Fatalf("%s: a download that does not match its sha256 was accepted", cmd)
				case !strings.Contains(err.Error(), "sha256 mismatch"):
					t.Errorf("%s: not the mismatch:\n%v", cmd, err)
				case !strings.Contains(err.Error(), want):
					t.Errorf("%s: the error is not at the sha256 pin's line (%s):\n%v", cmd, want, err)
				case !strings.Contains(err.Error(), "pallet lock --update re-pins it"):
					t.Errorf("%s: the error does not say how to re-pin:\n%v", cmd, err)
				}
			}
			mustPallet(t, "lock", "-q", "-f", recipe, "--update")
			mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		})
	}
}

// A Dockerfile's ADD --checksum fails with the same mismatch, but pallet
// lock does not pin a Dockerfile: its error names the ADD line and does
// not send the user to lock.
func TestDockerfileChecksumMismatchSaysNoLock(t *testing.T) {
	srv := fixture.Serve(t, map[string][]byte{"/tool.bin": []byte("the tool\n")})
	df := filepath.Join(t.TempDir(), "Dockerfile")
	writeFile(t, df, "FROM scratch\nADD --checksum=sha256:"+strings.Repeat("0", 64)+" "+srv.URL+"/tool.bin /bin/\n")
	_, berr := pallet(t, "build", "-q", "--no-cache", "-f", df, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	_, ferr := pallet(t, "fetch", "-q", "-f", df, "--mirror", t.TempDir())
	for cmd, err := range map[string]error{"build": berr, "fetch": ferr} {
		switch {
		case err == nil:
			t.Fatalf("%s: a download that does not match its --checksum was accepted", cmd)
		case !strings.Contains(err.Error(), "Dockerfile:2: ") || !strings.Contains(err.Error(), "sha256 mismatch"):
			t.Errorf("%s: not the mismatch at the ADD line:\n%v", cmd, err)
		case strings.Contains(err.Error(), "pallet lock"):
			t.Errorf("%s: a Dockerfile's mismatch sends the user to pallet lock, which does not pin it:\n%v", cmd, err)
		}
	}
}
