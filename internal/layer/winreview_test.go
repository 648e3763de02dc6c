package layer

import (
	"archive/tar"
	"io"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// NTFS holds at most 255 UTF-16 units in a name, which hcsshim's importer
// creates as it is (NtCreateFile, STATUS_OBJECT_NAME_INVALID beyond): a
// longer name, which a destination can give though no Linux file has
// one, is refused in both Windows formats and in a base's names, and the
// longest NTFS holds is written. Units, not bytes nor characters: 𐐀 is
// two, é one.
func TestWindowsNameLengthAsNTFS(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("a", 255), true},
		{strings.Repeat("a", 251) + ".exe", true},
		{strings.Repeat("é", 255), true},
		{strings.Repeat("𐐀", 127) + "a", true},
		{strings.Repeat("a", 256), false},
		{strings.Repeat("a", 252) + ".exe", false},
		{strings.Repeat("é", 256), false},
		{strings.Repeat("𐐀", 128), false},
	} {
		units := len([]rune(tc.name)) + strings.Count(tc.name, "𐐀")
		p := "k/" + tc.name + "/x.exe"
		for _, f := range []Format{Windows, WindowsBase} {
			img := tree.New()
			if err := img.Add(tree.Entry{Path: p, Kind: tree.Dir, Mode: 0o755}); err != nil {
				t.Fatal(err)
			}
			_, err := Build(img, t.TempDir(), Options{Format: f})
			switch {
			case tc.ok && err != nil:
				t.Errorf("%s, a name of %d units: %v", f, units, err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "NTFS holds at most 255") || !strings.HasPrefix(err.Error(), ShowPath("k/"+tc.name)+": ")):
				t.Errorf("%s, a name of %d units: got %v, want it refused naming k/%.20s...", f, units, err, tc.name)
			}
		}
		if err := NTFSName("Files/" + p); tc.ok != (err == nil) {
			t.Errorf("NTFSName, a name of %d units: %v", units, err)
		}
	}
}

// A symlink's target is written as Windows resolves it: hcsshim's importer
// puts the tar's link name into the reparse point as it is, and Windows
// follows a relative target only with '\' between its components (a '/'
// fails to open: the file name is invalid). Both Windows formats write
// '\' only, without "." or empty components, which are the same place;
// before, the target was written with '/' only, whatever it came as.
func TestWindowsLinkTargetsWrittenWithBackslashes(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"../data/x.dll", `..\data\x.dll`},
		{`..\data\x.dll`, `..\data\x.dll`},
		{"./x.dll", `x.dll`},
		{"sub//x.dll", `sub\x.dll`},
		{"../data/", `..\data`},
		{".", `.`},
	} {
		for _, f := range []Format{Windows, WindowsBase} {
			img := tree.New()
			for _, e := range []tree.Entry{
				{Path: "data", Kind: tree.Dir, Mode: 0o755},
				{Path: "bin/sub", Kind: tree.Dir, Mode: 0o755},
				{Path: "bin/link", Kind: tree.Symlink, Link: tc.target},
			} {
				if err := img.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Build(img, t.TempDir(), Options{Format: f})
			if err != nil {
				t.Fatalf("%s %s: %v", f, tc.target, err)
			}
			rc, err := l.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(rc)
			got := "no link"
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.Name == "Files/bin/link" {
					got = h.Linkname
				}
			}
			rc.Close()
			if got != tc.want {
				t.Errorf("%s: a link to %q written as %q, want %q", f, tc.target, got, tc.want)
			}
		}
	}
}
