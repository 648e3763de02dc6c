package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A tar whose later entry puts a hard link where a file was (t, then a,
// then a linked to t, as tar -r appends one) unpacks to two names of t's
// content. The SBOM gives each file the digest of what it holds: it gave
// both a's first content's, which the cache had learned for t's file.
func TestSBOMDigestsAfterAHardLinkReplacesAFile(t *testing.T) {
	a := fixture.Tar([]fixture.File{{Name: "t", Content: "two"}, {Name: "a", Content: "one"}, {Name: "a", HardLink: "t"}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.tar"), string(a))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  a:
    local: {path: ./a.tar, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: a, dest: /x/}
`)
	sboms := filepath.Join(dir, "sboms")
	mustPallet(t, "build", "-q", "--cache-dir", filepath.Join(dir, "cache"), "-f", recipe, "-o", "oci:"+filepath.Join(dir, "out"), "--sbom=spdx", "--sbom-dir", sboms)
	data, err := os.ReadFile(filepath.Join(sboms, "app_linux-amd64.sbom.spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Files []struct {
			FileName  string
			Checksums []struct{ Algorithm, ChecksumValue string }
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("two"))
	want := hex.EncodeToString(sum[:])
	n := 0
	for _, f := range doc.Files {
		for _, c := range f.Checksums {
			if c.Algorithm == "SHA256" {
				n++
				if c.ChecksumValue != want {
					t.Errorf("%s: SHA256 %s, but it holds \"two\" (%s)", f.FileName, c.ChecksumValue, want)
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("%d files with a SHA256 in the SBOM, want 2:\n%s", n, data)
	}
}
