package image

import (
	"archive/tar"
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/pallet-dev/pallet/internal/tree"
)

// tarLayer is a layer of hdrs, each a directory ("d/"), a link ("l->t")
// or a file.
func tarLayer(t *testing.T, names ...string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		hdr := &tar.Header{Name: n, Mode: 0o644, Typeflag: tar.TypeReg}
		switch {
		case strings.HasSuffix(n, "/"):
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		case strings.Contains(n, "->"):
			hdr.Name, hdr.Linkname, _ = strings.Cut(n, "->")
			hdr.Typeflag = tar.TypeSymlink
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// The links of a base are those of its layers applied in order, as an
// importer does: later entries replace, whiteouts remove, entries under a
// link land where it leads; only links that lead to a directory are kept.
func TestDirLinks(t *testing.T) {
	img := imageOf(t,
		tarLayer(t, "usr/", "usr/bin/", "usr/bin/sh", "usr/lib/", "usr/sbin/",
			"bin->usr/bin", "lib->/usr/lib", "sbin->usr/sbin", "lib64->usr/lib64", // lib64 leads nowhere
			"etc/", "etc/alt->/usr/bin/sh", // to a file
			"loop1->loop2", "loop2->loop1",
			"run/", "var/", "var/run->../run", "old->usr/lib"),
		tarLayer(t, "sbin/", // a directory replaces a link
			"bin/extra/", "bin/extra/x", // written through the link
			"cur->usr/bin/extra",
			".wh.old"),
		tarLayer(t, "var/.wh..wh..opq", "var/tmp/"), // opaque: var/run goes
	)
	got, err := DirLinks(img)
	if err != nil {
		t.Fatal(err)
	}
	want := tree.Links{"bin": "usr/bin", "lib": "/usr/lib", "cur": "usr/bin/extra"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("links %v\nwant  %v", got, want)
	}
	k1, err := LinksKey(img)
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := LinksKey(imageOf(t, tarLayer(t, "bin->usr/bin"))); k1 == k2 {
		t.Error("two bases with different layers share a links key")
	}
}

// wrongDiffIDs is an image whose config names other content than its
// layers hold.
type wrongDiffIDs struct{ v1.Image }

func (w wrongDiffIDs) ConfigFile() (*v1.ConfigFile, error) {
	cf, err := w.Image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}
	return cf, nil
}

func TestDirLinksChecksDiffIDs(t *testing.T) {
	img := wrongDiffIDs{imageOf(t, tarLayer(t, "usr/bin/", "bin->usr/bin"))}
	_, err := DirLinks(img)
	if err == nil || !strings.Contains(err.Error(), "not the diffID sha256:0000") {
		t.Errorf("err = %v", err)
	}
}
