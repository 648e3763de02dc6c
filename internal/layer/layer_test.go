package layer

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// fixture writes files with deliberately odd modes and mtimes: neither may
// reach the layer.
func fixture(t *testing.T, mode os.FileMode, mtime time.Time) *tree.Tree {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"bin/app": "#!/bin/sh\necho hi\n", "app.conf": "a=b\n"} {
		p := filepath.Join(dir, name)
		m := mode
		if name == "bin/app" {
			m |= 0o100
		}
		if err := os.WriteFile(p, []byte(content), m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	src, err := tree.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	img := tree.New()
	if err := img.Place(src, tree.Placement{Dest: "/opt/app/"}); err != nil {
		t.Fatal(err)
	}
	return img
}

func TestBuildDeterministic(t *testing.T) {
	for _, c := range []Compression{Gzip, Zstd} {
		for _, f := range []Format{Linux, Windows} {
			opt := Options{Format: f, Epoch: time.Unix(1700000000, 0), Compression: c}
			a, err := Build(fixture(t, 0o600, time.Now()), t.TempDir(), opt)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Build(fixture(t, 0o664, time.Unix(42, 0)), t.TempDir(), opt)
			if err != nil {
				t.Fatal(err)
			}
			da, _ := a.Digest()
			db, _ := b.Digest()
			if da != db {
				t.Errorf("%s/%s: digests differ: %s vs %s", f, c, da, db)
			}
			// The recorded digests are those of the bytes served.
			rc, _ := a.Uncompressed()
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil || n == 0 {
				t.Errorf("%s/%s: uncompressed read: %d, %v", f, c, n, err)
			}
		}
	}
}

func TestLinuxEntries(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	l, err := Build(fixture(t, 0o600, time.Now()), t.TempDir(), Options{Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	want := []struct {
		name string
		mode int64
		typ  byte
	}{
		{"opt/", 0o755, tar.TypeDir},
		{"opt/app/", 0o755, tar.TypeDir},
		{"opt/app/app.conf", 0o644, tar.TypeReg},
		{"opt/app/bin/", 0o755, tar.TypeDir},
		{"opt/app/bin/app", 0o755, tar.TypeReg},
	}
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Errorf("%d entries, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) {
			t.Fatalf("extra entry %s", h.Name)
		}
		w := want[i]
		if h.Name != w.name || h.Mode != w.mode || h.Typeflag != w.typ {
			t.Errorf("entry %d: %s %o %c, want %s %o %c", i, h.Name, h.Mode, h.Typeflag, w.name, w.mode, w.typ)
		}
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: host metadata leaked: %v %d:%d %q:%q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
	}
}

func TestChangedFileIsAnError(t *testing.T) {
	img := fixture(t, 0o644, time.Now())
	e, _ := img.Get("opt/app/app.conf")
	if err := os.WriteFile(e.Source, []byte("grown since the tree was made"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Build(img, dir, Options{}); err == nil || !strings.Contains(err.Error(), "grew while being read") {
		t.Fatalf("got %v, want an error saying the file grew", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("a failed build left %d file(s) behind", len(left))
	}
}

// Parallel compression gives the same bytes whatever the number of
// workers: blocks have a fixed size.
func TestParallelCompressionIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 5<<20+12345)
	for i := range big {
		big[i] = byte(i*7 + i/1000)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := tree.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, jobs := range []int{1, 3, 8} {
		for _, c := range []Compression{Gzip, Zstd} {
			l, err := Build(src, t.TempDir(), Options{Compression: c, Jobs: jobs})
			if err != nil {
				t.Fatal(err)
			}
			d, _ := l.Digest()
			digests = append(digests, string(c)+" "+d.Hex)
		}
	}
	for i := 2; i < len(digests); i++ {
		if digests[i] != digests[i%2] {
			t.Errorf("jobs changed the blob: %v", digests)
			break
		}
	}
}

// A file whose content is not the one the layer was keyed by fails the
// layer, naming it: it changed while the build ran.
func TestExpectCatchesChangedFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f")
	if err := os.WriteFile(src, []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := tree.New()
	if err := img.Add(tree.Entry{Path: "etc/f", Kind: tree.File, Mode: 0o644, Source: src, Size: 6}); err != nil {
		t.Fatal(err)
	}
	keyed := fmt.Sprintf("%x", sha256.Sum256([]byte("before")))
	_, err := Build(img, t.TempDir(), Options{Expect: func(string) string { return keyed }})
	if err == nil || !strings.Contains(err.Error(), "etc/f: "+src+" changed while the build read it") {
		t.Errorf("got %v", err)
	}
	edited := fmt.Sprintf("%x", sha256.Sum256([]byte("edited")))
	if _, err := Build(img, t.TempDir(), Options{Expect: func(string) string { return edited }}); err != nil {
		t.Errorf("an unchanged file failed: %v", err)
	}
}
