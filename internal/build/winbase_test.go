package build

import (
	"runtime"
	"strings"
	"testing"
	"time"

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
			got, dir, err := v.at(p)
			if err != nil {
				t.Fatal(err)
			}
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

// resolve follows a Windows base's links as Windows reads their targets,
// and says which it cannot follow.
func TestWindowsViewResolve(t *testing.T) {
	base := &tree.View{
		Dirs:  map[string]tree.DirMeta{"Program Files": {}, "Program Files/App": {}, "ProgramData": {}},
		Files: map[string]bool{"Program Files/App/a.exe": true},
		Links: tree.Links{
			"abs": `C:\Program Files\App`, "lower": `c:/program files/app`, "nt": `\\?\C:\ProgramData`,
			"rooted": `\ProgramData`, "rel": `Program Files\APP`, "up": `..\..\x`, "d": `D:\x`, "unc": `\\srv\share`,
			"drel": `C:x`, "loop1": "loop2", "loop2": "loop1", "exe": `rel\a.exe`,
		},
	}
	v := newWindowsView(base, 0)
	for _, tc := range []struct{ p, want, err string }{
		{p: "abs/bin", want: "Program Files/App/bin"},
		{p: "LOWER", want: "Program Files/App"},
		{p: "nt", want: "ProgramData"},
		{p: "Rooted/x", want: "ProgramData/x"},
		{p: "rel", want: "Program Files/App"},
		{p: "exe", want: "Program Files/App/a.exe"},
		{p: "up", err: "above"},
		{p: "d/y", err: `leads outside`},
		{p: "unc", err: `leads outside`},
		{p: "drel", err: `leads outside`},
		{p: "loop1", err: "more than 63 links"},
	} {
		got, _, _, err := v.resolve(tc.p)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %q, %v; want an error with %q", tc.p, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.p, got, err, tc.want)
		}
	}
}

// A base layer's link may hold a target as long as a PAX record takes
// (1 MiB), which Windows could never hold: a reparse point holds 16 KiB,
// and a path 32,767 UTF-16 units. A link that names itself again and
// again is refused as Windows refuses it, without the components of 63
// expansions held at once (hundreds of MB from a 1 MB base).
func TestWindowsViewResolveBounded(t *testing.T) {
	long := strings.TrimSuffix(strings.Repeat("a/", 500_000), "/")
	v := newWindowsView(&tree.View{Links: tree.Links{"a": long, "b": strings.Repeat("x", 40_000)}}, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for _, p := range []string{"a/x", "b/y"} {
		if _, _, _, err := v.resolve(p); err == nil {
			t.Errorf("%s: followed", p)
		}
	}
	runtime.ReadMemStats(&after)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("allocated %d MB", n>>20)
	}
}
