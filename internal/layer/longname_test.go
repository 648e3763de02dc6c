package layer

import (
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// Linux file systems hold at most 255 bytes in a name (NAME_MAX), bytes
// not characters: a longer one, which a destination can give though no
// file on a Linux disk has one, is refused where the layer is written,
// naming it, where before the layer was written and failed to unpack in
// the runtime. A Windows layer takes a name of 200 é (400 bytes, 200
// UTF-16 units), which NTFS holds.
func TestLinuxNameLengthAsNameMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("a", 255), true},
		{strings.Repeat("é", 127) + "a", true},
		{strings.Repeat("a", 256), false},
		{strings.Repeat("é", 128), false},
	} {
		p := "k/" + tc.name + "/x"
		img := tree.New()
		if err := img.Add(tree.Entry{Path: p, Kind: tree.Dir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		_, err := Build(img, t.TempDir(), Options{Format: Linux})
		switch {
		case tc.ok && err != nil:
			t.Errorf("a name of %d bytes: %v", len(tc.name), err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "at most 255 in one (NAME_MAX)") || !strings.HasPrefix(err.Error(), ShowPath("k/"+tc.name)+": ")):
			t.Errorf("a name of %d bytes: got %v, want it refused naming k/%.20s...", len(tc.name), err, tc.name)
		}
	}
	img := tree.New()
	if err := img.Add(tree.Entry{Path: "k/" + strings.Repeat("é", 200) + "/x", Kind: tree.Dir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(img, t.TempDir(), Options{Format: Windows}); err != nil {
		t.Errorf("Windows, a name of 200 units in 400 bytes: %v", err)
	}
}
