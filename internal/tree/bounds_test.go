package tree

import (
	"fmt"
	"math/rand"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// splitLess is the order layers have always had, written the plain way:
// path components compared one by one. comparePath must agree with it,
// or layer digests change.
func splitLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

func TestComparePathKeepsTheOrder(t *testing.T) {
	// Bytes either side of '/' (0x2f) matter most: '-', '.', ' ', '0'.
	alphabet := []string{"a", "b", "-", ".", " ", "0", "!", "~", "\x00", "\xff", "é", "/", "/", "ab", "a-b"}
	rng := rand.New(rand.NewSource(1))
	randPath := func() string {
		var b strings.Builder
		for range 1 + rng.Intn(6) {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		return b.String()
	}
	for range 200_000 {
		a, b := randPath(), randPath()
		if rng.Intn(4) == 0 {
			b = a + b // one a prefix of the other
		}
		want := 0
		switch {
		case splitLess(a, b):
			want = -1
		case splitLess(b, a):
			want = 1
		}
		if got := comparePath(a, b); got != want {
			t.Fatalf("comparePath(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// A tree of 100,000 files, as a large SDK or node_modules makes, is placed
// and listed in time that grows with its size, and listing it allocates a
// handful of slices, not two per comparison of the sort.
func TestLargeTree(t *testing.T) {
	src := New()
	for i := range 100_000 {
		p := fmt.Sprintf("lib/pkg-%03d/sub-%d/file-%06d.js", i%500, i%7, i)
		if err := src.Add(Entry{Path: p, Kind: File, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	img := New()
	if err := img.Place(src, Placement{Dest: "/app/node_modules/", UID: 1000, GID: 1000}); err != nil {
		t.Fatal(err)
	}
	es := img.Entries()
	if took := time.Since(start); took > 10*time.Second*raceSlowdown {
		t.Errorf("placing and listing 100,000 files took %s", took)
	}
	// 100,000 files, 500 packages of 7 subdirectories, lib, and app,
	// app/node_modules.
	if want := 100_000 + 500*8 + 3; len(es) != want {
		t.Fatalf("%d entries, want %d", len(es), want)
	}
	if !slices.IsSortedFunc(es, func(a, b Entry) int { return comparePath(a.Path, b.Path) }) {
		t.Error("entries are not in order")
	}
	if allocs := testing.AllocsPerRun(1, func() { img.Entries() }); allocs > 10 {
		t.Errorf("Entries of %d made %.0f allocations", len(es), allocs)
	}
}

func TestOwnerRange(t *testing.T) {
	// Through int64, so that the test builds where int is 32 bits.
	tooBig, huge := int64(MaxID)+1, int64(1)<<40
	for _, id := range []int{-1, int(tooBig), int(huge)} {
		tr := New()
		err := tr.Add(Entry{Path: "a", Kind: File, UID: id})
		if err == nil || !strings.Contains(err.Error(), "ids must be 0 to 4294967294") {
			t.Errorf("uid %d: %v", id, err)
		}
		err = New().Place(tr, Placement{Dest: "/x", GID: id})
		if err == nil {
			t.Errorf("placement with gid %d accepted", id)
		}
	}
	if strconv.IntSize == 64 {
		most := int64(MaxID)
		if err := New().Add(Entry{Path: "a", Kind: File, UID: int(most), GID: 65534}); err != nil {
			t.Errorf("uid %d: %v", most, err)
		}
	}
}

// splitEntries is Entries as it was written first: every ancestor of every
// entry walked and the result sorted with splitLess. Layer digests were
// made from its output.
func splitEntries(t *Tree) []Entry {
	all := map[string]Entry{}
	for p, e := range t.entries {
		all[p] = *e
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, ok := all[dir]; ok {
				continue
			}
			if de, ok := t.entries[dir]; ok {
				all[dir] = *de
			} else {
				all[dir] = Entry{Path: dir, Kind: Dir, Mode: 0o755}
			}
		}
	}
	var out []Entry
	for _, e := range all {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return splitLess(out[i].Path, out[j].Path) })
	return out
}

func TestEntriesAsBefore(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	names := []string{"a", "a-b", "a.b", "a b", "b", "ab", "a0", "Z", "é"}
	for range 200 {
		tr := New()
		for range rng.Intn(60) {
			parts := make([]string, 1+rng.Intn(4))
			for i := range parts {
				parts[i] = names[rng.Intn(len(names))]
			}
			kind := []Kind{File, Dir, Symlink}[rng.Intn(3)]
			// Collisions are refused and leave the tree as it was.
			tr.Add(Entry{Path: strings.Join(parts, "/"), Kind: kind, Mode: 0o640, UID: rng.Intn(3)})
		}
		got, want := tr.Entries(), splitEntries(tr)
		if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("Entries:\n%v\nbefore:\n%v", paths(got), paths(want))
		}
	}
}

// A path is bounded as an archive entry's is: each directory placed adds
// its parents, so a dest of 16,000 directories (32 KB) cost 40 s to place.
// Paths up to the bounds are kept.
func TestPathBounds(t *testing.T) {
	deepest := strings.Repeat("d/", MaxDepth-1) + "f"
	longest := strings.Repeat("n", MaxPath)
	for _, p := range []string{deepest, "/" + deepest, longest} {
		if _, err := CleanPath(p); err != nil {
			t.Errorf("%.20s... (%d bytes): %v", p, len(p), err)
		}
	}
	for _, p := range []string{"d/" + deepest, longest + "n", strings.Repeat("a/", 16000)} {
		start := time.Now()
		tr := New()
		err := tr.Add(Entry{Path: p, Kind: Dir})
		if err == nil || !strings.Contains(err.Error(), "deeper than 256") {
			t.Errorf("%.20s... (%d bytes): %v, want it refused", p, len(p), err)
		}
		if took := time.Since(start); took > time.Second*raceSlowdown {
			t.Errorf("took %s", took)
		}
	}
}
