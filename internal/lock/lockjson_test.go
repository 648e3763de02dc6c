package lock

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// A recipe kept as JSON (YAML's subset, which tools generate and check
// with jq) stays JSON: the pins lock adds or fills in a JSON mapping are
// written as JSON's quoted keys and strings, where lock wrote YAML's
// plain ones (sha256: HEX) into it.
func TestLockJSONRecipe(t *testing.T) {
	files := map[string][]byte{"/one.bin": []byte("one"), "/amd64.bin": []byte("amd64"), "/arm64.bin": []byte("arm64")}
	s := newSite(t, files)
	g := newRepo(t)
	commit := g.commit("v1")
	g.run("tag", "v1")
	src := `{"version": 1,
 "artifacts": {
  "one": {"url": {"url": "SRV/one.bin", "sha256": null}, "licenses": "none"},
  "each": {"url": {"url": "SRV/{{arch}}.bin"}, "licenses": "none"},
  "tool": {"default": "source", "modes": {"source": {"git": {"repo": "GIT", "tag": "v1"}, "go": {"packages": "."}}}, "licenses": "none"}
 },
 "images": {"app": {"base": "scratch", "platforms": ["linux/amd64", "linux/arm64"],
  "files": [{"artifact": "one", "dest": "/1/"}, {"artifact": "each", "dest": "/e/"}, {"artifact": "tool", "dest": "/t/"}]}}
}
`
	src = strings.NewReplacer("SRV", s.URL, "GIT", g.url()).Replace(src)
	want := strings.NewReplacer(
		`"sha256": null`, `"sha256": "`+fixture.SHA256(files["/one.bin"])+`"`,
		`{{arch}}.bin"}`, `{{arch}}.bin", "sha256": {"linux/amd64": "`+fixture.SHA256(files["/amd64.bin"])+`", "linux/arm64": "`+fixture.SHA256(files["/arm64.bin"])+`"}}`,
		`"repo": "`+g.url()+`"`, `"repo": "`+g.url()+`", "commit": "`+commit+`"`,
	).Replace(src)
	file := filepath.Join(t.TempDir(), "pallet.json")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{File: file, Fetcher: fetcher(t)}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Error("the locked recipe is no longer JSON")
	}
	if _, err := recipe.Parse(file, got); err != nil {
		t.Error(err)
	}
}
