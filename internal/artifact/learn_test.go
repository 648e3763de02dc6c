package artifact_test

import (
	"archive/tar"
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// The files of an unpacked download are hashed as they are unpacked, and
// the cache knows each one's digest under the stamp it has in the cache
// entry, after it was linked there and its work copy removed: no later
// step of the build, nor the next build, reads them to know it.
func TestUnpackedFilesAreKnown(t *testing.T) {
	files := map[string]string{"pkg/bin/tool": "#!/bin/sh\necho tool\n", "pkg/LICENSE": "MIT", "pkg/share/data": "data"}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	archive := buf.Bytes()
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.Write(archive) })

	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := fetcher(t)
	f.Cache = c
	r := &artifact.Request{Name: "tool", Platform: platform.Platform{OS: "linux", Arch: "amd64"}, Kind: &artifact.URL{
		URL: srv.URL + "/tool.tar.gz", SHA256: sum(archive), Extract: &artifact.Extract{Strip: 1}}}
	res, err := f.Fetch(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range res.Tree.Entries() {
		if e.Kind != tree.File {
			continue
		}
		n++
		info, err := os.Stat(e.Source)
		if err != nil {
			t.Fatal(err)
		}
		if !within(c.Dir(), e.Source) {
			t.Errorf("%s is not in the cache", e.Source)
		}
		if tree.StampOf(info) != e.Stamp {
			t.Errorf("%s: the tree's stamp is not the file's", e.Path)
		}
		want := sum([]byte(files["pkg/"+e.Path]))
		if got, ok := c.Learned(e.Stamp); !ok || got != want {
			t.Errorf("%s: the cache knows %q (%v), want %s", e.Path, got, ok, want)
		}
	}
	if n != len(files) {
		t.Errorf("%d files in the tree, want %d", n, len(files))
	}
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && !filepath.IsAbs(rel) && !strings.HasPrefix(rel, "..")
}

// A later tar entry that replaces a name with a hard link (tar -r, or a
// hostile archive) leaves that name a second name of another file: the
// digest the earlier content was written with is not that file's. The
// cache must know each file's digest as it ends up, whatever order the
// names were written and replaced in, or a build takes a digest of
// other content for it (in the layer, the record, the next build's memo).
func TestUnpackedFilesKnownAfterHardLinkReplaces(t *testing.T) {
	for name, ents := range map[string][]*tar.Header{
		"file then a hard link at its name": {
			{Name: "t", Typeflag: tar.TypeReg, Size: 3, Linkname: "two"},
			{Name: "a", Typeflag: tar.TypeReg, Size: 3, Linkname: "one"},
			{Name: "a", Typeflag: tar.TypeLink, Linkname: "t"},
		},
		"the linked-to name replaced in its turn": {
			{Name: "t", Typeflag: tar.TypeReg, Size: 3, Linkname: "two"},
			{Name: "a", Typeflag: tar.TypeReg, Size: 3, Linkname: "one"},
			{Name: "a", Typeflag: tar.TypeLink, Linkname: "t"},
			{Name: "t", Typeflag: tar.TypeReg, Size: 5, Linkname: "three"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range ents {
				h := *h
				body := ""
				if h.Typeflag == tar.TypeReg {
					// Linkname carries a file's body in this table.
					body, h.Linkname = h.Linkname, ""
				}
				h.Mode = 0o644
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
				tw.Write([]byte(body))
			}
			tw.Close()
			dir := t.TempDir()
			src := filepath.Join(dir, "a.tar")
			if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f := fetcher(t)
			f.Cache = c
			r := &artifact.Request{Name: "a", Platform: platform.Platform{OS: "linux", Arch: "amd64"},
				Kind: &artifact.Local{Path: src, Extract: &artifact.Extract{}}}
			res, err := f.Fetch(context.Background(), r, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Tree.Entries() {
				if e.Kind != tree.File {
					continue
				}
				data, err := os.ReadFile(e.Source)
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := c.Learned(e.Stamp); ok && got != sum(data) {
					t.Errorf("%s holds %q, but the cache knows its digest as %s, not %s", e.Path, data, got, sum(data))
				}
			}
		})
	}
}
