package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A tar whose later entries replace earlier ones at the same name, in
// the orders tar -r appends them (the same name thrice, a hard link to a
// name later replaced, a directory replaced by a file and back again, a
// symlink replaced by a directory that is then written in), builds to a
// layer holding what GNU tar unpacks from it, and the SBOM gives each
// file the digest of the bytes its layer holds: built afresh, and again
// from the cache, whose digests Extract told it.
func TestReview120ReplacedEntriesShipWhatTheyHold(t *testing.T) {
	tarPath, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar on PATH")
	}
	if out, err := exec.Command(tarPath, "--version").Output(); err != nil || !bytes.Contains(out, []byte("GNU tar")) {
		t.Skip("tar on PATH is not GNU tar")
	}
	entries := fixture.Tar([]fixture.File{
		{Name: "top/thrice", Content: "one"},
		{Name: "top/thrice", Content: "two"},
		{Name: "top/thrice", Content: "three"},
		{Name: "top/t", Content: "t first"},
		{Name: "top/held", HardLink: "top/t"},
		{Name: "top/t", Content: "t second"},
		{Name: "top/u", Content: "u"},
		{Name: "top/t", HardLink: "top/u"},
		{Name: "top/d", Dir: true, Mode: 0o755},
		{Name: "top/d", Content: "d as a file"},
		{Name: "top/d", Dir: true, Mode: 0o755},
		{Name: "top/d/in", Content: "in d"},
		{Name: "top/l", Link: "d"},
		{Name: "top/l", Dir: true, Mode: 0o755},
		{Name: "top/l/in", Content: "in l"},
		{Name: "other/thrice", Content: "from other"},
	})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.tar"), string(entries))

	// What GNU tar unpacks, stripped as the recipe strips: other/thrice
	// comes last, and replaces top/thrice.
	ref := t.TempDir()
	if out, err := exec.Command(tarPath, "-xf", filepath.Join(dir, "a.tar"), "-C", ref, "--strip-components=1").CombinedOutput(); err != nil {
		t.Fatalf("GNU tar: %v\n%s", err, out)
	}
	want := map[string]string{}
	err = filepath.WalkDir(ref, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(ref, p)
		want["x/"+filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  a:
    local: {path: ./a.tar, extract: {strip: 1}}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: a, dest: /x/}
`)
	cache := filepath.Join(dir, "cache")
	for _, run := range []string{"afresh", "from the cache"} {
		out, sboms := filepath.Join(t.TempDir(), "o"), filepath.Join(t.TempDir(), "sboms")
		mustPallet(t, "build", "-q", "--cache-dir", cache, "-f", recipe, "-o", "oci:"+out, "--sbom=spdx", "--sbom-dir", sboms)
		layers, err := layoutImage(t, out, "linux/amd64").Layers()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		walkLayer(t, layers[len(layers)-1], func(h *tar.Header, r io.Reader) {
			switch h.Typeflag {
			case tar.TypeReg:
				b, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				got[h.Name] = string(b)
			case tar.TypeLink:
				got[h.Name] = got[h.Linkname]
			}
		})
		if !maps.Equal(got, want) {
			t.Errorf("%s: the layer's files %q, GNU tar unpacks %q", run, got, want)
		}

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
		var named []string
		for _, f := range doc.Files {
			name := strings.TrimPrefix(strings.TrimPrefix(f.FileName, "."), "/")
			named = append(named, name)
			body, ok := got[name]
			if !ok {
				t.Errorf("%s: the SBOM names %s, which the layer does not hold", run, f.FileName)
				continue
			}
			sum := sha256.Sum256([]byte(body))
			for _, c := range f.Checksums {
				if c.Algorithm == "SHA256" && c.ChecksumValue != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: the SBOM gives %s the SHA256 %s, but it holds %q", run, f.FileName, c.ChecksumValue, body)
				}
			}
		}
		if len(named) != len(got) {
			slices.Sort(named)
			t.Errorf("%s: the SBOM names the files %q, the layer holds %q", run, named, got)
		}
	}
}
