package layer

import (
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
