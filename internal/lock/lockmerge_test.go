package lock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// A url section that takes its URL from another's through a merge key
// ("<<: *dl"), last or alone in its mapping, gets its own sha256 on the
// line after the merge, where lock said it could not tell where the
// alias ended and pinned nothing.
func TestLockMergedSection(t *testing.T) {
	files := map[string][]byte{"/a.bin": []byte("a"), "/amd64.bin": []byte("amd64"), "/arm64.bin": []byte("arm64")}
	s := newSite(t, files)
	a, amd, arm := fixture.SHA256(files["/a.bin"]), fixture.SHA256(files["/amd64.bin"]), fixture.SHA256(files["/arm64.bin"])
	const images = "images:\n  app:\n    base: scratch\n    platforms: [linux/amd64, linux/arm64]\n    files:\n      - {artifact: a, dest: /a/}\n      - {artifact: b, dest: /b/}\n"
	for _, tc := range []struct{ name, src, want string }{{
		name: "the merge alone",
		src:  "version: 1\nartifacts:\n  a:\n    url: &dl\n      url: SRV/a.bin\n    licenses: none\n  b:\n    url:\n      <<: *dl\n    licenses: none\n",
		want: "version: 1\nartifacts:\n  a:\n    url: &dl\n      url: SRV/a.bin\n      sha256: " + a + "\n    licenses: none\n  b:\n    url:\n      <<: *dl\n      sha256: " + a + "\n    licenses: none\n",
	}, {
		name: "the merge last, a digest per platform",
		src:  "version: 1\nartifacts:\n  a:\n    url: &dl\n      url: SRV/{{arch}}.bin\n    licenses: none\n  b:\n    url:\n      extract: {}\n      <<: *dl   # same as a\n    licenses: none\n",
		want: "version: 1\nartifacts:\n  a:\n    url: &dl\n      url: SRV/{{arch}}.bin\n      sha256:\n        linux/amd64: " + amd + "\n        linux/arm64: " + arm + "\n    licenses: none\n" +
			"  b:\n    url:\n      extract: {}\n      <<: *dl   # same as a\n      sha256:\n        linux/amd64: " + amd + "\n        linux/arm64: " + arm + "\n    licenses: none\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pallet.yaml")
			if err := os.WriteFile(file, []byte(strings.ReplaceAll(tc.src, "SRV", s.URL)+images), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(context.Background(), Options{File: file, Fetcher: fetcher(t)}); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(file)
			if want := strings.ReplaceAll(tc.want, "SRV", s.URL) + images; string(got) != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			if _, err := recipe.Parse(file, got); err != nil {
				t.Error(err)
			}
		})
	}
}
