package tree

import "testing"

// A view with a layer applied keeps the base's directories' descriptors
// but where the layer puts an entry, which is what the union shows
// there then; With leaves the view it copies as it was.
func TestViewWinDirsApplied(t *testing.T) {
	sd := &WinDir{RawSD: "AQAEgA==", Attr: 0x10}
	v := &View{Links: Links{}, Dirs: map[string]DirMeta{"a": {Mode: 0o755}, "b": {Mode: 0o755}}, WinDirs: map[string]*WinDir{"a": sd, "b": sd}}
	layer := New()
	if err := layer.Add(Entry{Path: "b", Kind: Dir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := layer.Add(Entry{Path: "a/x", Kind: File}); err != nil {
		t.Fatal(err)
	}
	w := v.With(layer)
	if w.WinDirs["a"] != sd || w.WinDirs["b"] != nil {
		t.Errorf("applied: %v", w.WinDirs)
	}
	if v.WinDirs["b"] != sd {
		t.Errorf("With changed the view it copied: %v", v.WinDirs)
	}
}
