package artifact_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// A release tar's named licence LICENSE is a hard link to
// docs/LICENSE.md, which include (bin/tool) leaves out, as a named
// licence adds its name alone to what is extracted: the licence is
// taken with docs/LICENSE.md's content, and the artifact holds what
// include says, where the link was refused as left out by include.
func TestNamedLicenceHardLinkToLeftOutTarget(t *testing.T) {
	arch := filepath.Join(t.TempDir(), "a.tar")
	files := []fixture.File{
		{Name: "p/docs/LICENSE.md", Content: "licence text"},
		{Name: "p/LICENSE", HardLink: "p/docs/LICENSE.md"},
		{Name: "p/bin/tool", Content: "t"},
	}
	if err := os.WriteFile(arch, fixture.Tar(files), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &artifact.Request{Name: "a", Licenses: []string{"LICENSE"}}
	res, err := (&artifact.Local{Path: arch, Extract: &artifact.Extract{Include: []string{"bin/tool"}, Strip: 1}}).Produce(context.Background(), artifact.New(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lic, ok := res.Licenses.Get("LICENSE")
	if !ok {
		t.Fatal("LICENSE not taken")
	}
	if b, err := os.ReadFile(lic.Source); err != nil || string(b) != "licence text" {
		t.Errorf("LICENSE holds %q (%v), want the text of docs/LICENSE.md", b, err)
	}
	if got, want := nonDirs(res.Tree), []string{"bin/tool"}; !slices.Equal(got, want) {
		t.Errorf("the artifact holds %q, want %q", got, want)
	}
}

// include: [bin/a], where bin/a is a hard link to libexec/a: the
// artifact holds bin/a with libexec/a's content, and not libexec/a, and
// the cache learns the digest of bin/a as unpacked, where the link was
// refused as left out by include.
func TestKeptHardLinkToLeftOutTarget(t *testing.T) {
	data := fixture.Tar([]fixture.File{
		{Name: "p/libexec/a", Content: "the real a", Mode: 0o755},
		{Name: "p/bin/a", HardLink: "p/libexec/a"},
		{Name: "p/bin/other", Content: "o"},
	})
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.Write(data) })
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := fetcher(t)
	f.Cache = c
	r := &artifact.Request{Name: "a", NoLicense: true, Platform: platform.Platform{OS: "linux", Arch: "amd64"}, Kind: &artifact.URL{
		URL: srv.URL + "/a.tar", SHA256: sum(data), Extract: &artifact.Extract{Strip: 1, Include: []string{"bin/a"}}}}
	res, err := f.Fetch(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nonDirs(res.Tree), []string{"bin/a"}; !slices.Equal(got, want) {
		t.Errorf("the artifact holds %q, want %q", got, want)
	}
	e, ok := res.Tree.Get("bin/a")
	if !ok {
		t.Fatal("no bin/a")
	}
	if b, err := os.ReadFile(e.Source); err != nil || string(b) != "the real a" {
		t.Errorf("bin/a holds %q (%v), want libexec/a's content", b, err)
	}
	if got, ok := c.Learned(e.Stamp); !ok || got != sum([]byte("the real a")) {
		t.Errorf("the cache knows %q (%v) of bin/a, want the digest of its content", got, ok)
	}
}

// nonDirs lists the paths of a tree's files and links, directories left
// out.
func nonDirs(t *tree.Tree) []string {
	var out []string
	for _, e := range t.Entries() {
		if e.Kind != tree.Dir {
			out = append(out, e.Path)
		}
	}
	slices.Sort(out)
	return out
}
