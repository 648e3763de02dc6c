package tree

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// manyFiles makes a directory of n files, 20 a directory, a symlink in
// 40, and lists it with FromDir: a tree as a local artifact gives it,
// sorted and not indexed.
func manyFiles(t testing.TB, n int) *Tree {
	t.Helper()
	root := t.TempDir()
	for i := range n {
		dir := filepath.Join(root, "lib", fmt.Sprintf("pkg%02d", i/400), fmt.Sprintf("sub%d", (i/20)%20))
		if i%20 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		name := filepath.Join(dir, fmt.Sprintf("f%05d", i))
		var err error
		if i%40 == 39 {
			err = os.Symlink("..", name)
		} else {
			err = os.WriteFile(name, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	tr, err := FromDir(root)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// placed is tr placed, as a build places an artifact, under dest of an
// empty tree: sorted, not indexed, with the parents of dest synthesized.
func placed(t testing.TB, tr *Tree, dest string) *Tree {
	t.Helper()
	out := New()
	if err := out.Move(tr, Placement{Dest: dest}); err != nil {
		t.Fatal(err)
	}
	return out
}

// baseView is what a base image holds as a Linux build sees it: a few
// directories, a link and files, none of which the tree goes through.
func baseView() *View {
	return &View{
		Links: Links{"bin": "usr/bin", "lib64": "usr/lib64"},
		Dirs: map[string]DirMeta{"usr": defaultDir, "usr/bin": defaultDir, "etc": defaultDir,
			"tmp": {Mode: 0o1777}, "usr/local": defaultDir, "usr/local/lib": defaultDir},
		Implied: map[string]bool{"var": true},
		Files:   map[string]bool{"etc/passwd": true, "usr/bin/sh": true},
	}
}

// Placing a tree over a base it does not go through costs nothing per
// entry: the few paths of the base are looked up in the tree's sorted
// entries. Before, the tree was indexed for it, a map of every path
// kept for as long as the tree, some 50 bytes an entry.
func TestThroughBytesPerEntry205(t *testing.T) {
	if raceSlowdown > 1 {
		t.Skip("the race detector allocates as it pleases")
	}
	ptr := float64(unsafe.Sizeof(uintptr(0)))
	v := baseView()
	for _, n := range []int{1000, 4000} {
		tr := placed(t, manyFiles(t, n), "usr/local")
		for range tr.All() {
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := tr.Through(v)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got != tr {
			t.Fatalf("%d files: Through made a new tree for a base it does not meet", n)
		}
		per := float64(after.TotalAlloc-before.TotalAlloc) / float64(tr.Len())
		t.Logf("%d entries: %.2f bytes each", tr.Len(), per)
		// Less than a pointer each: no index, nor a list of the entries.
		if per >= ptr {
			t.Errorf("Through over %d entries that meet nothing allocated %.2f bytes per entry, want less than %v", tr.Len(), per, ptr)
		}
	}
}

// A tree looked up without an index answers as one indexed: Through
// over a base it goes through (a link on its way, a directory whose
// mode it would change, an implied one) gives the same tree, and a
// view with it applied is the same view.
func TestThroughUnindexedAsIndexed205(t *testing.T) {
	views := map[string]*View{
		"link":    {Links: Links{"usr/local/lib/pkg01": "opt/pkgs"}, Dirs: map[string]DirMeta{"opt/pkgs": defaultDir}},
		"dirmode": {Dirs: map[string]DirMeta{"usr/local/lib/pkg00/sub3": {Mode: 0o700, UID: 5}}},
		"implied": {Implied: map[string]bool{"usr/local": true}, Dirs: map[string]DirMeta{"usr": {Mode: 0o750}}},
		"base":    baseView(),
	}
	for name, v := range views {
		t.Run(name, func(t *testing.T) {
			src := manyFiles(t, 900)
			again := New()
			if err := again.Place(src, Placement{Dest: "/"}); err != nil {
				t.Fatal(err)
			}
			plain := placed(t, src, "usr/local")
			indexed := placed(t, again, "usr/local")
			indexed.orderMu.Lock()
			indexed.index()
			indexed.orderMu.Unlock()
			if len(plain.unindexed) == 0 || len(indexed.unindexed) != 0 {
				t.Fatalf("the trees are %d and %d entries short of indexed: the test compares nothing", len(plain.unindexed), len(indexed.unindexed))
			}
			a, errA := plain.Through(v)
			b, errB := indexed.Through(v)
			if fmt.Sprint(errA) != fmt.Sprint(errB) {
				t.Fatalf("Through: %v unindexed, %v indexed", errA, errB)
			}
			if errA == nil && !reflect.DeepEqual(a.Entries(), b.Entries()) {
				t.Fatalf("Through gave another tree unindexed than indexed")
			}
			if name != "base" && a == plain {
				t.Fatalf("the view %s meets the tree, but Through found it did not", name)
			}
			if !reflect.DeepEqual(v.With(plain), v.With(indexed)) {
				t.Fatalf("the view with the tree applied differs unindexed")
			}
		})
	}
}

// Looking paths up in a listed tree, and linking names of it as an
// archive's hard links, cost nothing per entry: the sorted entries are
// searched. Before, either indexed the tree, a map of every path kept
// as long as the tree, for the few paths asked.
func TestGetAndLinkBytesPerEntry205(t *testing.T) {
	if raceSlowdown > 1 {
		t.Skip("the race detector allocates as it pleases")
	}
	ptr := float64(unsafe.Sizeof(uintptr(0)))
	for _, n := range []int{1000, 4000} {
		tr := manyFiles(t, n)
		a, b := "lib/pkg00/sub0/f00001", "lib/pkg00/sub1/f00021"
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		e, ok := tr.Get(a)
		err := tr.Link([][]string{{a, b}})
		_, missing := tr.Get("lib/pkg00/sub0/f99999")
		_, parent := tr.Get("lib")
		runtime.ReadMemStats(&after)
		if err != nil || !ok || e.Path != a || missing || !parent {
			t.Fatalf("Get(%s) = %v, %v; Link: %v; a missing file found %v, lib found %v", a, e, ok, err, missing, parent)
		}
		ea, _ := tr.Get(a)
		eb, _ := tr.Get(b)
		if ea.Linked == nil || ea.Linked != eb.Linked {
			t.Fatalf("%s and %s are not linked: %p, %p", a, b, ea.Linked, eb.Linked)
		}
		per := float64(after.TotalAlloc-before.TotalAlloc) / float64(tr.Len())
		t.Logf("%d entries: %.2f bytes each", tr.Len(), per)
		if per >= ptr {
			t.Errorf("Get and Link over %d entries allocated %.2f bytes per entry, want less than %v", tr.Len(), per, ptr)
		}
		if err := tr.Link([][]string{{a, "lib/pkg00"}}); err == nil {
			t.Errorf("a directory linked as an archive's hard link")
		}
	}
}
