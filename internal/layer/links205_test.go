package layer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/pallet-dev/pallet/internal/tree"
)

// linkTrees is two layers of about n entries in all, as a Windows image
// of many small files has them: directories of files, a symlink in 40
// to a file or a directory, and, in the upper layer, names the lower
// holds spelled in another case, a directory become a file and a file
// become a link, which NTFS takes for the lower's.
func linkTrees(t testing.TB, n int) []*tree.Tree {
	t.Helper()
	lower, upper := tree.New(), tree.New()
	for i := range n {
		dir := fmt.Sprintf("Program Files/app/node_modules/pkg%03d/lib%d", i/200, (i/20)%10)
		e := tree.Entry{Path: fmt.Sprintf("%s/file%05d.js", dir, i), Kind: tree.File, Mode: 0o644, Source: os.DevNull}
		into := lower
		switch {
		case i%40 == 39:
			e = tree.Entry{Path: fmt.Sprintf("%s/link%05d", dir, i), Kind: tree.Symlink, Mode: 0o777, Link: fmt.Sprintf("../lib%d", (i/20+1)%10)}
		case i%40 == 19:
			e = tree.Entry{Path: fmt.Sprintf("%s/link%05d", dir, i), Kind: tree.Symlink, Mode: 0o777, Link: fmt.Sprintf("FILE%05d.JS", i-1)}
		case i%97 == 0:
			into = upper
			e.Path = strings.ToUpper(e.Path)
		case i%101 == 0:
			into = upper
			e = tree.Entry{Path: fmt.Sprintf("%s/file%05d.js", strings.ToLower(dir), i-1), Kind: tree.Symlink, Mode: 0o777, Link: ".."}
		}
		if err := into.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	// Sorted now: what the trees cost is theirs, not the index's.
	for _, tr := range []*tree.Tree{lower, upper} {
		for range tr.All() {
			break
		}
	}
	return []*tree.Tree{lower, upper}
}

// byMap is ImageLinks as it was, a map by NTFSKey of each entry, the
// later winning: what the index must answer alike.
func byMap(trees []*tree.Tree) linkIndex {
	ix := linkIndex{entries: map[string]tree.Entry{}}
	for _, t := range trees {
		for _, e := range t.Entries() {
			ix.entries[NTFSKey(e.Path)] = e
		}
	}
	return ix
}

// The sorted index answers every path as the map by NTFSKey did: those
// the trees hold in any case, through links, and those they do not.
func TestImageLinksAsMap205(t *testing.T) {
	trees := linkTrees(t, 4000)
	want := byMap(trees)
	got := ImageLinks(nil, trees...)
	var asked []string
	for _, tr := range trees {
		for e := range tr.All() {
			asked = append(asked, e.Path, strings.ToLower(e.Path), strings.ToUpper(e.Path), e.Path+"/x", path.Join(path.Dir(e.Path), "missing"))
			if e.Kind == tree.Symlink {
				asked = append(asked, e.Path+"/file00000.js", e.Path+"/FILE00001.JS")
			}
		}
	}
	dirs, known := 0, 0
	for _, p := range asked {
		wd, wk := want.isDir(p)
		gd, gk := got(p)
		if wd != gd || wk != gk {
			t.Fatalf("%s: isDir, known = %v, %v; the map by NTFSKey said %v, %v", p, gd, gk, wd, wk)
		}
		if wd {
			dirs++
		}
		if wk {
			known++
		}
	}
	// Else the comparison above compared nothing much.
	if dirs == 0 || known == len(asked) || known == 0 {
		t.Fatalf("of %d paths, %d directories and %d known: the fixture does not exercise the index", len(asked), dirs, known)
	}
}

// ntfsCompare orders names as their NTFSKeys compare, and takes for one
// the names NTFS does, Unicode's cases and invalid bytes included.
func TestNTFSCompare205(t *testing.T) {
	words := []string{"", "a", "A", "ab", "aB", "a/b", "a-b", "ǅ", "ǆ", "Ǆ", "ς", "σ", "Σ", "K", "k", "\u212a", "ı", "I", "i", "ſ", "s",
		"𐐀", "𐐨", "\xff", "\ufffd", "\xfe\xff", "é", "É", "ß", "ẞ", "µ", "Μ", "z", "{", "_", "~", "\x7f"}
	rng := rand.New(rand.NewPCG(205, 1))
	for range 20000 {
		a := words[rng.IntN(len(words))] + words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
		b := words[rng.IntN(len(words))] + words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
		if rng.IntN(4) == 0 {
			b = a
			if rng.IntN(2) == 0 {
				b = strings.ToUpper(a)
			}
		}
		if got, want := ntfsCompare(a, b), strings.Compare(NTFSKey(a), NTFSKey(b)); got != want {
			t.Fatalf("ntfsCompare(%q, %q) = %d, want %d (NTFSKeys %q, %q)", a, b, got, want, NTFSKey(a), NTFSKey(b))
		}
	}
}

// bytesPerEntry is what f allocates, in bytes, per entry of trees.
func bytesPerEntry(trees []*tree.Tree, f func()) float64 {
	n := 0
	for _, t := range trees {
		for range t.All() {
			n++
		}
	}
	f() // whatever is made once, not per entry
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// The index of an image's links, held while its Windows layers are
// written, costs a node per entry, whatever the image's size: not a
// copy of each entry, nor a key made of each path. Before, a tree of
// 70,000 entries cost some 300 bytes an entry in it.
func TestImageLinksBytesPerEntry205(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as it pleases")
	}
	node := float64(unsafe.Sizeof(linkNode{}))
	// A node each, and a link's target (a string header) at most each.
	bound := node + float64(unsafe.Sizeof(""))
	var per [2]float64
	for i, n := range []int{5000, 20000} {
		trees := linkTrees(t, n)
		var f func(string) (bool, bool)
		per[i] = bytesPerEntry(trees, func() { f = ImageLinks(nil, trees...) })
		if d, k := f("program files/APP/node_modules/pkg000/lib0/link00019"); d || !k {
			t.Fatalf("the link to a file: isDir, known = %v, %v", d, k)
		}
		t.Logf("%d entries: %.1f bytes each", n, per[i])
		if per[i] > bound {
			t.Errorf("ImageLinks over %d entries allocated %.1f bytes per entry, want at most %.1f (a %v-byte node, and the links' targets)", n, per[i], bound, node)
		}
	}
	// Four times the entries, not more per entry.
	if per[1] > per[0]*1.25 {
		t.Errorf("ImageLinks allocated %.1f bytes per entry for 4 times the entries, %.1f for 1", per[1], per[0])
	}
}

// Keying a Windows layer whose links the image types (LinkTarget, as a
// build gives it) and listing its untyped links walk the tree: no copy
// of its entries (an Entry each), made and dropped for every layer.
func TestWindowsKeyBytesPerEntry205(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as it pleases")
	}
	trees := linkTrees(t, 8000)
	links := ImageLinks(nil, trees...)
	opt := Options{Format: Windows, LinkTarget: links}
	digest := func(string, tree.Stamp) (string, error) { return "0123", nil }
	entry := float64(unsafe.Sizeof(tree.Entry{}))
	key := bytesPerEntry(trees[:1], func() {
		if err := KeyParts(trees[0], opt, digest, func([]byte) {}); err != nil {
			t.Fatal(err)
		}
	})
	untyped := bytesPerEntry(trees[:1], func() { UntypedLinks(trees[0], opt) })
	// The same paths twice, which NTFS takes for one and are one: none
	// of the upper layer's respellings, which it refuses.
	same := []*tree.Tree{trees[0], linkTrees(t, 8000)[0]}
	check := bytesPerEntry(same, func() {
		if err := CheckWindowsImage(same...); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("per entry: key %.1f, untyped links %.1f, case check %.1f bytes; an Entry is %v", key, untyped, check, entry)
	if key >= entry/2 || untyped >= entry/2 {
		t.Errorf("keying a Windows layer allocated %.1f bytes per entry, listing its untyped links %.1f: want less than half an Entry (%v bytes), which a copy of the entries is", key, untyped, entry)
	}
	// A key of each path (collisionKey) and its slot: not an Entry.
	if check >= entry {
		t.Errorf("checking an image's names allocated %.1f bytes per entry, want less than an Entry (%v bytes)", check, entry)
	}
}

// caseCheckByMap is CheckWindowsImage as it was: a walk in order, layer
// by layer, with a map by collisionKey of the first entry of each name.
func caseCheckByMap(trees []*tree.Tree) *CaseCollision {
	type first struct {
		e     tree.Entry
		layer int
	}
	seen := map[string]first{}
	for i, t := range trees {
		for _, e := range t.Entries() {
			k := collisionKey(e.Path)
			f, ok := seen[k]
			if !ok {
				seen[k] = first{e, i}
				continue
			}
			if f.e.Path == e.Path || (f.e.Kind == tree.Dir && e.Kind == tree.Dir) {
				continue
			}
			return &CaseCollision{First: f.e.Path, Later: e.Path, FirstLayer: f.layer, Layer: i, firstKind: f.e.Kind, kind: e.Kind}
		}
	}
	return nil
}

// Of an image with many names spelled twice, CheckWindowsImage names the
// pair the walk in order met first, as it did, Unicode's folding
// included; and none where names are only spelled alike, or are
// directories.
func TestCheckWindowsImageAsMap205(t *testing.T) {
	rng := rand.New(rand.NewPCG(205, 2))
	collisions := 0
	names := []string{"a", "A", "b", "ſ", "s", "S", "k", "\u212a", "ς", "σ", "é", "É", "x\xff", "x\ufffd", "d"}
	for round := range 300 {
		var trees []*tree.Tree
		for range 1 + rng.IntN(3) {
			tr := tree.New()
			for range 1 + rng.IntN(6) {
				p := "top/" + names[rng.IntN(len(names))]
				if rng.IntN(2) == 0 {
					p += "/" + names[rng.IntN(len(names))]
				}
				e := tree.Entry{Path: p, Kind: tree.File, Mode: 0o644, Source: os.DevNull}
				if rng.IntN(3) == 0 {
					e = tree.Entry{Path: p, Kind: tree.Dir, Mode: 0o755}
				}
				tr.Add(e) // a collision within the tree is its own business
			}
			trees = append(trees, tr)
		}
		want := caseCheckByMap(trees)
		if want != nil {
			collisions++
		}
		err := CheckWindowsImage(trees...)
		got, _ := err.(*CaseCollision)
		switch {
		case want == nil && err != nil, want != nil && got == nil:
			t.Fatalf("round %d: %v, want %v", round, err, want)
		case want != nil && fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", *want):
			t.Fatalf("round %d: %+v, want %+v", round, *got, *want)
		}
	}
	if collisions == 0 || collisions == 300 {
		t.Fatalf("%d rounds of 300 with a collision: the fixture tests one answer only", collisions)
	}
}

// compareMapped with foldRune orders names as their collisionKeys compare.
func TestFoldCompare205(t *testing.T) {
	words := []string{"", "a", "A", "ǅ", "ǆ", "Ǆ", "ς", "σ", "Σ", "K", "k", "\u212a", "ſ", "s", "S", "\xff", "\ufffd", "é", "É", "ß", "ẞ", "µ", "Μ", "/", "-"}
	rng := rand.New(rand.NewPCG(205, 3))
	for range 20000 {
		a := words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
		b := words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
		if got, want := compareMapped(a, b, foldRune), strings.Compare(collisionKey(a), collisionKey(b)); got != want {
			t.Fatalf("compareMapped(%q, %q, foldRune) = %d, want %d", a, b, got, want)
		}
	}
}
