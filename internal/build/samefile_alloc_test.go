package build

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Checking that no path is in two layers keeps, per path, what its
// message needs: it copied every entry on top (tree.Entries), 152 bytes
// each, 15 MB at 100,000 files, beside the map that was made small to
// spare that. What it allocates per entry is now under one Entry's size,
// the bound a copy of every entry exceeds alone.
func TestSameFileInTwoLayersAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's allocations are not the program's")
	}
	const n = 20000
	trees := make([]*tree.Tree, 2)
	pi := &plan.PlatformImage{}
	for l := range trees {
		trees[l] = tree.New()
		for i := range n {
			if err := trees[l].Add(tree.Entry{Path: fmt.Sprintf("l%d/d%d/f%d", l, i%100, i), Kind: tree.File, Mode: 0o644}); err != nil {
				t.Fatal(err)
			}
		}
		trees[l].Entries() // sorted before the measure, as the build's are
		pi.Layers = append(pi.Layers, &plan.Layer{Name: fmt.Sprint(l)})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := sameFileInTwoLayers("img", pi, trees); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	entries := 2 * (n + 101) // files, their directories and the layer's root
	per := float64(after.TotalAlloc-before.TotalAlloc) / float64(entries)
	t.Logf("%.0f bytes allocated per entry", per)
	if limit := float64(unsafe.Sizeof(tree.Entry{})); per >= limit {
		t.Errorf("%.0f bytes allocated per entry, want under %.0f (one entry's size)", per, limit)
	}
}
