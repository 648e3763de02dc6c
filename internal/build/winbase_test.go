package build

import (
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// A base whose layers spell one directory two ways (pallet merges
// directories spelled apart across layers, C:\K then C:\k\x) gives one
// spelling, the same on every build: a file copied into it is written
// under that spelling, and another would change the layer's digest.
func TestWindowsViewSpellingIsStable(t *testing.T) {
	base := &tree.View{
		Dirs:  map[string]tree.DirMeta{"K": {}, "k": {}, "k/x": {}, "Program Files": {}, "PROGRAM FILES": {}, "program files": {}},
		Links: tree.Links{"kl": "K", "KL": "k/x"},
	}
	first := map[string]string{}
	for i := 0; i < 50; i++ {
		v := newWindowsView(base, 0)
		for _, p := range []string{"k", "program files", "kl"} {
			got, dir := v.at(p)
			if !dir {
				t.Fatalf("%s: no directory", p)
			}
			if i == 0 {
				first[p] = got
			} else if got != first[p] {
				t.Fatalf("%s: spelled %q, then %q", p, first[p], got)
			}
		}
	}
}
