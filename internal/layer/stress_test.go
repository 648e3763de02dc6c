package layer

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/archive"
	fx "github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/tree"
)

// extractTree unpacks data (an archive in format f) as an artifact would
// be, and returns its tree.
func extractTree(t *testing.T, name string, data []byte, f archive.Format) (*tree.Tree, error) {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := archive.Extract(context.Background(), src, f, dir, archive.Options{}); err != nil {
		return nil, err
	}
	return tree.FromDir(dir)
}

// tarWithHardLink is a "./" tar whose second name for app.exe is a hard
// link, which fixture.Tar does not write.
func tarWithHardLink(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./Program Files/My App/app.exe", Typeflag: tar.TypeReg, Mode: 0o755, Size: 4},
		{Name: "./bin/hard link.exe", Typeflag: tar.TypeLink, Linkname: "./Program Files/My App/app.exe"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			io.WriteString(tw, "app!")
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stressImage is the accepted part of the stress fixture: three artifacts
// from the three archive shapes, placed in two layers of one image.
func stressImage(t *testing.T) []*tree.Tree {
	t.Helper()
	var deep []string
	for i := 0; i < 40; i++ {
		deep = append(deep, "d"+strconv.Itoa(i))
	}
	long := strings.Repeat("ł", 120) // 240 bytes, 120 UTF-16 units: under NTFS's 255
	dotTar := fx.Tar([]fx.File{
		{Name: "./", Dir: true},
		{Name: "./" + strings.Join(deep, "/") + "/leaf.txt", Content: "deep"},
		{Name: "./" + long + "/" + long + "/" + long + ".txt", Content: "long"},
		{Name: "./données/σοφός.txt", Content: "final sigma"},
		{Name: "./données/Kelvin \u212a.txt", Content: "Kelvin sign"},
		{Name: "./current", Link: "données"},
		{Name: "./latest", Link: `.\current`},
		{Name: "./données/readme", Link: `..\d0\d1\d2`},
	})
	a, err := extractTree(t, "a.tar", dotTar, archive.Tar)
	if err != nil {
		t.Fatal(err)
	}
	b, err := extractTree(t, "b.tar", tarWithHardLink(t), archive.Tar)
	if err != nil {
		t.Fatal(err)
	}
	c, err := extractTree(t, "c.zip", fx.Zip([]fx.File{
		{Name: "tools/x/y/z.dll", Content: "z"},
		{Name: "tools/with space/ΣΟΦΌΣ.txt", Content: "upper"},
	}), archive.Zip)
	if err != nil {
		t.Fatal(err)
	}
	lower, upper := tree.New(), tree.New()
	for _, p := range []struct {
		dst *tree.Tree
		src *tree.Tree
		pl  tree.Placement
	}{
		{lower, a, tree.Placement{Dest: "/"}},
		{lower, b, tree.Placement{Dest: "/"}},
		{upper, c, tree.Placement{Dest: "/opt/"}},
	} {
		if err := p.dst.Place(p.src, p.pl); err != nil {
			t.Fatal(err)
		}
	}
	links := mustTree(t,
		tree.Entry{Path: "opt/links/to-deep", Kind: tree.Symlink, Link: `..\..\d0\d1`},
		tree.Entry{Path: "opt/links/to-latest", Kind: tree.Symlink, Link: "../../latest"},
		tree.Entry{Path: "opt/links/to-app", Kind: tree.Symlink, Link: "../../bin/hard link.exe"},
		tree.Entry{Path: "opt/links/to-base", Kind: tree.Symlink, Link: `..\..\Windows\System32`, LinkAs: tree.LinkDir},
	)
	if err := upper.Place(links, tree.Placement{Dest: "/"}); err != nil {
		t.Fatal(err)
	}
	return []*tree.Tree{lower, upper}
}

// Every layer of the stress image is written, read back and checked by
// the verifier: layout, records, descriptors, and each link typed as the
// whole image says (directory links through other layers and chains).
func TestWindowsStressFixture(t *testing.T) {
	trees := stressImage(t)
	if err := CheckWindowsImage(trees...); err != nil {
		t.Fatal(err)
	}
	links := ImageLinks(nil, trees...)
	wantDir := map[string]bool{
		"current": true, "latest": true, "données/readme": true,
		"opt/links/to-deep": true, "opt/links/to-latest": true, "opt/links/to-app": false, "opt/links/to-base": true,
	}
	contents := map[string]string{}
	seenLinks := map[string]bool{}
	for i, tr := range trees {
		opt := Options{Format: Windows, LinkTarget: links}
		if u := UntypedLinks(tr, opt); len(u) != 0 {
			t.Errorf("layer %d: untyped links %v", i, u)
		}
		l, err := Build(tr, t.TempDir(), opt)
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		io.Copy(&buf, rc)
		rc.Close()
		checkWindowsLayer(t, bytes.NewReader(buf.Bytes()))
		tr := tar.NewReader(&buf)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			p := strings.TrimPrefix(h.Name, "Files/")
			switch h.Typeflag {
			case tar.TypeReg:
				b, _ := io.ReadAll(tr)
				contents[p] = string(b)
			case tar.TypeSymlink:
				seenLinks[p] = true
				attr, _ := strconv.Atoi(h.PAXRecords[paxFileAttr])
				if want, ok := wantDir[p]; !ok || want != (attr&attrDirectory != 0) {
					t.Errorf("layer %d: link %s -> %s has attributes %d, want a directory link: %v", i, p, h.Linkname, attr, want)
				}
			}
		}
	}
	for p := range wantDir {
		if !seenLinks[p] {
			t.Errorf("link %s not written", p)
		}
	}
	long := strings.Repeat("ł", 120)
	for p, want := range map[string]string{
		"d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/d20/d21/d22/d23/d24/d25/d26/d27/d28/d29/d30/d31/d32/d33/d34/d35/d36/d37/d38/d39/leaf.txt": "deep",
		long + "/" + long + "/" + long + ".txt": "long",
		"données/σοφός.txt":                     "final sigma",
		"données/Kelvin \u212a.txt":             "Kelvin sign",
		"Program Files/My App/app.exe":          "app!",
		"bin/hard link.exe":                     "app!",
		"opt/tools/x/y/z.dll":                   "z",
		"opt/tools/with space/ΣΟΦΌΣ.txt":        "upper",
	} {
		if contents[p] != want {
			t.Errorf("%s: content %q, want %q", p, contents[p], want)
		}
	}
}

// The refused part of the stress fixture: names NTFS takes for one, in one
// layer (two artifacts) or across layers, and link targets that leave the
// image with '\' for a separator, whether an archive or a tree holds them.
func TestWindowsStressRefusals(t *testing.T) {
	trees := stressImage(t)

	// Σ and σ are one letter on NTFS: the zip's ΣΟΦΌΣ.txt placed beside
	// a σοφόσ.txt, in the same layer. ς and σ, the Kelvin sign and k, are
	// one only on older volumes and to tools that fold case as Unicode
	// does: refused too (collisionKey).
	for _, pair := range [][2]string{
		{"données/σοφόσ.txt", "données/ΣΟΦΌΣ.txt"},
		{"données/σοφός.txt", "données/σοφόσ.txt"},
		{"données/Kelvin \u212a.txt", "données/Kelvin k.txt"},
	} {
		same := tree.New()
		for _, p := range pair {
			if err := same.Add(tree.Entry{Path: p, Kind: tree.File, Mode: 0o644, Source: emptyFile(t)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Build(same, t.TempDir(), Options{Format: Windows}); err == nil || !strings.Contains(err.Error(), "case-insensitive") {
			t.Errorf("one layer, %s and %s: got %v, want the collision refused", pair[0], pair[1], err)
		}
	}

	// Across layers: a third layer spells the app's directory otherwise.
	third := mustTree(t, tree.Entry{Path: "PROGRAM FILES/MY APP/APP.EXE", Kind: tree.File, Mode: 0o644, Source: emptyFile(t)})
	err := CheckWindowsImage(append(trees, third)...)
	if c, ok := err.(*CaseCollision); !ok || c.Layer != 2 || c.FirstLayer != 0 || c.First != "Program Files/My App/app.exe" {
		t.Errorf("across layers: got %v, want layer 3's APP.EXE refused against layer 1's", err)
	}
	// A directory spelled otherwise merges: no collision.
	if err := CheckWindowsImage(append(trees, mustTree(t, tree.Entry{Path: "PROGRAM FILES/other.exe", Kind: tree.File, Mode: 0o644, Source: emptyFile(t)}))...); err != nil {
		t.Errorf("directories spelled apart: %v", err)
	}

	for _, target := range []string{`..\..\..\Windows`, `\Windows`, `C:\Windows`, `..\x\..\..\..\y`} {
		data := fx.Tar([]fx.File{{Name: "./a/b/link", Link: target}})
		if _, err := extractTree(t, "bad.tar", data, archive.Tar); err == nil {
			t.Errorf("archive link %s extracted", target)
		}
		tr := mustTree(t, tree.Entry{Path: "a/b/link", Kind: tree.Symlink, Link: target})
		if _, err := Build(tr, t.TempDir(), Options{Format: Windows}); err == nil || !strings.Contains(err.Error(), "a/b/link") {
			t.Errorf("tree link %s: got %v, want it refused", target, err)
		}
	}
}
