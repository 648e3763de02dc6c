package build

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// A Windows base's directories' descriptors survive the cache's
// encoding, each distinct one written once and read back as one; a
// directory naming a descriptor the view does not hold is refused.
func TestViewEncodingWinDirs(t *testing.T) {
	a := &tree.WinDir{RawSD: "AQAEgA==", Attr: 0x10}
	b := &tree.WinDir{RawSD: "AQAEgA==", Attr: 0x2010}
	v := &tree.View{
		Links:     tree.Links{},
		Dirs:      map[string]tree.DirMeta{"Windows": {Mode: 0o755}, "Windows/System32": {Mode: 0o755}, "Program Files": {Mode: 0o755}, "Users": {Mode: 0o755}},
		Files:     map[string]bool{},
		FileLinks: tree.Links{},
		WinDirs:   map[string]*tree.WinDir{"Windows": a, "Program Files": a, "Windows/System32": b},
	}
	s := encodeView(v)
	if n := strings.Count(s, "AQAEgA=="); n != 2 {
		t.Errorf("the descriptors are written %d times, want once each:\n%s", n, s)
	}
	got, err := decodeView(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Errorf("round trip: %+v\nwant %+v", got, v)
	}
	if got.WinDirs["Windows"] != got.WinDirs["Program Files"] {
		t.Error("one descriptor read back as two")
	}
	// No Windows descriptors, no lines for them: a Linux base's view is
	// encoded as before.
	v.WinDirs = nil
	if s := encodeView(v); strings.Contains(s, "\nS ") || strings.Contains(s, "\nW ") {
		t.Errorf("lines for no descriptors:\n%s", s)
	}
	for _, body := range []string{
		"D 493 0 0 \"x\"\nW 3 \"x\"",
		"D 493 0 0 \"x\"\nS 0 16 AQAEgA==\nW 0 \"../x\"",
		"S 0 16 AQAEgA==\nS 0 16 AQAEgB==",
		"S 0 x AQAEgA==",
		"S 0 16 ",
	} {
		sum := sha256.Sum256([]byte(body))
		if _, err := decodeView(hex.EncodeToString(sum[:]) + "\n" + body); err == nil {
			t.Errorf("%q accepted", body)
		}
	}
}
