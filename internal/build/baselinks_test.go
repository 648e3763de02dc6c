package build

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// A base's view survives the cache's encoding, names with spaces, quotes
// and newlines included; a damaged or hand-made entry is refused.
func TestViewEncoding(t *testing.T) {
	v := &tree.View{
		Links:     tree.Links{"bin": "usr/bin", "odd \" name": "/x \" y", "nl\nname": "t\tt"},
		Dirs:      map[string]tree.DirMeta{"tmp": {Mode: 0o777 | fs.ModeSticky}, "home/a b": {Mode: 0o700, UID: 1000, GID: 1000}},
		Files:     map[string]bool{"etc/passwd": true, "a \" b": true},
		FileLinks: tree.Links{"etc/os-release": "../usr/lib/os-release", "x y": "/a \" b"},
	}
	s := encodeView(v)
	got, err := decodeView(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Errorf("round trip: %+v\nwant %+v", got, v)
	}
	if _, err := decodeView(strings.Replace(s, "usr/bin", "usr/sbin", 1)); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("an altered entry: %v", err)
	}
	for _, evil := range []*tree.View{
		{Links: tree.Links{"../etc": "x"}},
		{Links: tree.Links{"/bin": "x"}},
		{Links: tree.Links{"bin": ""}},
		{FileLinks: tree.Links{"../x": "y"}},
		{FileLinks: tree.Links{"x": ""}},
		{Dirs: map[string]tree.DirMeta{"a/../b": {}}},
		{Dirs: map[string]tree.DirMeta{".": {}}},
		{Files: map[string]bool{"../x": true}},
	} {
		s := encodeView(evil) // a sum that matches: only the shape tells
		if _, err := decodeView(s); err == nil {
			t.Errorf("%+v accepted", evil)
		}
	}
}
