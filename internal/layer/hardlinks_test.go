package layer

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/tree"
)

// linkedTree is an unpacked archive whose hard links made perl and
// perl5.36.0 one file, and zcat and gunzip another; the files on disk
// are copies, as a cache entry copied elsewhere holds them: only the
// groups the tree was told link them.
func linkedTree(t *testing.T) *tree.Tree {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"usr/bin/perl": "perl", "usr/bin/perl5.36.0": "perl",
		"usr/bin/zcat": "gzip", "usr/bin/gunzip": "gzip",
		"usr/bin/lone": "lone",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, err := tree.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Link([][]string{{"usr/bin/perl", "usr/bin/perl5.36.0"}, {"usr/bin/gunzip", "usr/bin/zcat"}}); err != nil {
		t.Fatal(err)
	}
	return src
}

// layerEntry is what a layer's tar says of one entry.
type layerEntry struct {
	Name, Linkname string
	Type           byte
	Mode           int64
	Size           int64
}

// readLayer reads a layer's tar back entry by entry, checking that each
// hard link's target came before it as a regular file.
func readLayer(t *testing.T, r io.Reader) []layerEntry {
	t.Helper()
	var out []layerEntry
	files := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			files[h.Name] = true
		case tar.TypeLink:
			if !files[h.Linkname] {
				t.Errorf("%s links to %s, which no regular file before it is", h.Name, h.Linkname)
			}
		}
		out = append(out, layerEntry{h.Name, h.Linkname, h.Typeflag, h.Mode, h.Size})
	}
}

// A Linux layer holds the later names of a file an archive's hard links
// name several times as links to the first in the layer's order, only
// among the names one placement places alike; a Windows layer holds
// copies.
func TestHardLinks(t *testing.T) {
	src := linkedTree(t)
	img := tree.New()
	if err := img.Place(src, tree.Placement{Dest: "/"}); err != nil {
		t.Fatal(err)
	}
	// The same archive placed again is other files: linked among
	// themselves, not to the first placement's.
	if err := img.Place(src, tree.Placement{Dest: "/opt/", From: "usr/bin"}); err != nil {
		t.Fatal(err)
	}
	// One name of a group alone, renamed, links to nothing.
	if err := img.Place(src, tree.Placement{Dest: "/sbin/zcat2", From: "usr/bin/zcat"}); err != nil {
		t.Fatal(err)
	}
	opt := Options{Format: Linux, Epoch: time.Unix(1, 0)}
	l, err := Build(img, t.TempDir(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Layer(l); err != nil {
		t.Errorf("validate.Layer: %v", err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := readLayer(t, rc)
	want := []layerEntry{
		{"opt/", "", tar.TypeDir, 0o755, 0},
		{"opt/gunzip", "", tar.TypeReg, 0o755, 4},
		{"opt/lone", "", tar.TypeReg, 0o755, 4},
		{"opt/perl", "", tar.TypeReg, 0o755, 4},
		{"opt/perl5.36.0", "opt/perl", tar.TypeLink, 0o755, 0},
		{"opt/zcat", "opt/gunzip", tar.TypeLink, 0o755, 0},
		{"sbin/", "", tar.TypeDir, 0o755, 0},
		{"sbin/zcat2", "", tar.TypeReg, 0o755, 4},
		{"usr/", "", tar.TypeDir, 0o755, 0},
		{"usr/bin/", "", tar.TypeDir, 0o755, 0},
		{"usr/bin/gunzip", "", tar.TypeReg, 0o755, 4},
		{"usr/bin/lone", "", tar.TypeReg, 0o755, 4},
		{"usr/bin/perl", "", tar.TypeReg, 0o755, 4},
		{"usr/bin/perl5.36.0", "usr/bin/perl", tar.TypeLink, 0o755, 0},
		{"usr/bin/zcat", "usr/bin/gunzip", tar.TypeLink, 0o755, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer entries\n got %v\nwant %v", got, want)
	}

	// The layer's key says which are links: a layer of copies stored
	// before is not taken for it.
	digest := func(string, tree.Stamp) (string, error) { return "sum", nil }
	linked, err := Key(img, opt, digest)
	if err != nil {
		t.Fatal(err)
	}
	copies := tree.New()
	for e := range img.All() {
		e.Linked = nil
		if err := copies.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	unlinked, err := Key(copies, opt, digest)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(linked, unlinked) {
		t.Error("the key of a layer of hard links is that of a layer of copies")
	}

	win := tree.New()
	if err := win.Place(src, tree.Placement{Dest: "/"}); err != nil {
		t.Fatal(err)
	}
	entries, err := func() ([]WindowsEntry, error) {
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(WriteTar(pw, win.Entries(), Options{Format: Windows, Epoch: time.Unix(1, 0)}))
		}()
		return VerifyWindows(pr)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Header.Typeflag == tar.TypeLink {
			t.Errorf("Windows layer: %s is a hard link", e.Header.Name)
		}
	}
}

// Names of one file placed with other modes or owners are written each
// as itself: a link would give them one inode, whose mode and owner
// would be the last one's.
func TestHardLinksDiffer(t *testing.T) {
	src := linkedTree(t)
	src.Archive(func(p string) (tree.DirMeta, bool) {
		if p == "usr/bin/perl5.36.0" {
			return tree.DirMeta{Mode: fs.ModeSetuid | 0o755}, true
		}
		return tree.DirMeta{}, false
	})
	img := tree.New()
	if err := img.Place(src, tree.Placement{Dest: "/", KeepArchiveModes: true}); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(WriteTar(pw, img.Entries(), Options{Format: Linux, Epoch: time.Unix(1, 0)})) }()
	for _, e := range readLayer(t, pr) {
		if e.Name == "usr/bin/perl5.36.0" && (e.Type != tar.TypeReg || e.Mode != 0o4755) {
			t.Errorf("%s: %+v, want a setuid file of its own", e.Name, e)
		}
		if e.Name == "usr/bin/zcat" && e.Type != tar.TypeLink {
			t.Errorf("%s: %+v, want a link to gunzip", e.Name, e)
		}
	}
}
