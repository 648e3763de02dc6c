package tree

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func paths(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out
}

func TestEntriesOrderAndParents(t *testing.T) {
	tr := New()
	for _, p := range []string{"usr/local/bin/b", "usr/local/bin/a", "usr/local-x/c", "etc/hello.conf"} {
		if err := tr.Add(Entry{Path: p, Kind: File, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	got := paths(tr.Entries())
	want := []string{"etc", "etc/hello.conf", "usr", "usr/local", "usr/local/bin", "usr/local/bin/a", "usr/local/bin/b", "usr/local-x", "usr/local-x/c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestAddConflicts(t *testing.T) {
	tests := []struct {
		name  string
		first Entry
		then  Entry
		want  string
	}{
		{"file twice", Entry{Path: "a", Kind: File}, Entry{Path: "a", Kind: File}, "placed twice"},
		{"file under file", Entry{Path: "a", Kind: File}, Entry{Path: "a/b", Kind: File}, "parent a is a file"},
		{"file over dir", Entry{Path: "a/b", Kind: File}, Entry{Path: "a", Kind: File}, "directory holds other entries"},
		{"dotdot", Entry{Path: "x", Kind: File}, Entry{Path: "../etc/passwd", Kind: File}, "leaves the tree"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			if err := tr.Add(tc.first); err != nil {
				t.Fatal(err)
			}
			err := tr.Add(tc.then)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
	tr := New()
	if err := tr.Add(Entry{Path: "d", Kind: Dir, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(Entry{Path: "d", Kind: Dir, Mode: 0o755}); err != nil {
		t.Errorf("a directory placed twice is fine: %v", err)
	}
}

func TestFromDirAndPlace(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "bin"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("x"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "README"), []byte("y"), 0o600))
	must(os.Symlink("bin/tool", filepath.Join(dir, "tool")))

	src, err := FromDir(dir)
	must(err)
	img := New()
	must(img.Place(src, Placement{Dest: "/opt/app", UID: 10, GID: 20}))
	want := map[string]Entry{
		"opt":              {Kind: Dir, Mode: 0o755},
		"opt/app":          {Kind: Dir, Mode: 0o755, UID: 10, GID: 20},
		"opt/app/README":   {Kind: File, Mode: 0o644, UID: 10, GID: 20, Size: 1},
		"opt/app/bin":      {Kind: Dir, Mode: 0o755, UID: 10, GID: 20},
		"opt/app/bin/tool": {Kind: File, Mode: 0o755, UID: 10, GID: 20, Size: 1},
		"opt/app/tool":     {Kind: Symlink, Mode: 0o777, UID: 10, GID: 20, Link: "bin/tool"},
	}
	got := img.Entries()
	if len(got) != len(want) {
		t.Fatalf("entries %v", paths(got))
	}
	for _, e := range got {
		w := want[e.Path]
		if e.Kind != w.Kind || e.Mode != w.Mode || e.UID != w.UID || e.GID != w.GID || e.Link != w.Link || e.Size != w.Size {
			t.Errorf("%s: got %+v, want %+v", e.Path, e, w)
		}
	}

	// A one-file tree placed at a path without trailing slash is renamed.
	one, err := FromFile(filepath.Join(dir, "README"), "README")
	must(err)
	img = New()
	must(img.Place(one, Placement{Dest: "/etc/app.conf", FileMode: 0o600}))
	if e, ok := img.Get("etc/app.conf"); !ok || e.Mode != 0o600 {
		t.Errorf("file placement: %+v", e)
	}
	img = New()
	must(img.Place(one, Placement{Dest: "/etc/"}))
	if _, ok := img.Get("etc/README"); !ok {
		t.Errorf("directory placement: %v", paths(img.Entries()))
	}
}

// From takes one file (renamed, or kept under its name into a directory),
// one link, or one directory's contents out of an artifact.
func TestPlaceFrom(t *testing.T) {
	src := New()
	for _, e := range []Entry{
		{Path: "bin/antrea-cni.exe", Kind: File, Mode: 0o755, Size: 1},
		{Path: "bin/antctl.exe", Kind: File, Mode: 0o755, Size: 1},
		{Path: "one/only.txt", Kind: File, Mode: 0o644, Size: 1},
		{Path: "current", Kind: Symlink, Mode: 0o777, Link: "bin"},
	} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		pl   Placement
		want []string
	}{
		{Placement{Dest: "/k/antrea/cni/antrea.exe", From: "bin/antrea-cni.exe"}, []string{"k", "k/antrea", "k/antrea/cni", "k/antrea/cni/antrea.exe"}},
		{Placement{Dest: "/k/", From: "/bin/antctl.exe"}, []string{"k", "k/antctl.exe"}},
		{Placement{Dest: "/opt/bin", From: "bin"}, []string{"opt", "opt/bin", "opt/bin/antctl.exe", "opt/bin/antrea-cni.exe"}},
		// A directory holding one file stays a directory.
		{Placement{Dest: "/etc/one", From: "one/"}, []string{"etc", "etc/one", "etc/one/only.txt"}},
		{Placement{Dest: "/usr/latest", From: "current", LinkAs: LinkDir}, []string{"usr", "usr/latest"}},
	}
	for _, c := range cases {
		img := New()
		if err := img.Place(src, c.pl); err != nil {
			t.Errorf("%+v: %v", c.pl, err)
			continue
		}
		if got := paths(img.Entries()); !slices.Equal(got, c.want) {
			t.Errorf("%+v: placed %v, want %v", c.pl, got, c.want)
		}
	}
	img := New()
	if err := img.Place(src, Placement{Dest: "/usr/latest", From: "current", LinkAs: LinkDir}); err != nil {
		t.Fatal(err)
	}
	if e, _ := img.Get("usr/latest"); e.Kind != Symlink || e.Link != "bin" || e.LinkAs != LinkDir {
		t.Errorf("link placed as %+v", e)
	}
	for _, from := range []string{"nothing", "bin/antctl.exe/x", "../bin"} {
		if err := New().Place(src, Placement{Dest: "/x", From: from}); err == nil {
			t.Errorf("path %s placed", from)
		}
	}
	// A path that names nothing says what was likely meant: the name
	// with .exe (a Windows build's), in another case, or elsewhere.
	for from, want := range map[string]string{
		"bin/antctl":  "path bin/antctl: not in the artifact, or an empty directory (the artifact has bin/antctl.exe)",
		"BIN/Antctl":  "(the artifact has bin/antctl.exe)",
		"antctl.exe":  "(the artifact has bin/antctl.exe)",
		"only.txt":    "(the artifact has one/only.txt)",
		"bin/kubectl": "path bin/kubectl: not in the artifact, or an empty directory",
	} {
		err := New().Place(src, Placement{Dest: "/x", From: from})
		switch {
		case want == "" && err != nil:
			t.Errorf("path %s: %v", from, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("path %s: got %v, want %q", from, err, want)
		case from == "bin/kubectl" && strings.Contains(err.Error(), "(the artifact has"):
			t.Errorf("path %s: %v suggests an unrelated name", from, err)
		}
	}
}

func TestParseLinkKind(t *testing.T) {
	for s, want := range map[string]LinkKind{"": LinkUnknown, "dir": LinkDir, "file": LinkFile} {
		if got, err := ParseLinkKind(s); err != nil || got != want || got.String() != s {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	if _, err := ParseLinkKind("junction"); err == nil {
		t.Error("junction accepted")
	}
}

// Entries keeps its sorted order between calls: an entry added after a
// call is in the next one, in its place, and builds reading one tree at
// once (images sharing an artifact) may call it together.
func TestEntriesOrderFollowsAdds(t *testing.T) {
	tr := New()
	for _, p := range []string{"b/x", "a", "c"} {
		if err := tr.Add(Entry{Path: p, Kind: File, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	paths := func() string {
		var out []string
		for _, e := range tr.Entries() {
			out = append(out, e.Path)
		}
		return strings.Join(out, " ")
	}
	if got := paths(); got != "a b b/x c" {
		t.Fatalf("entries %q", got)
	}
	if err := tr.Add(Entry{Path: "b/a", Kind: File, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(Entry{Path: "b", Kind: Dir, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	if got := paths(); got != "a b b/a b/x c" {
		t.Errorf("after adding: entries %q", got)
	}
	if e := tr.Entries()[1]; e.Mode != 0o700 {
		t.Errorf("the directory added over a synthesized one has mode %o", e.Mode)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n := len(tr.Entries()); n != 5 {
				t.Errorf("%d entries", n)
			}
		}()
	}
	wg.Wait()
}

// Placing a whole tree where the destination holds nothing yet gives the
// entries, the order and the conflicts that adding each one would: into
// an empty tree, into one holding other paths, and at the root.
func TestPlaceNewAsAdd(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/x", "a/y/z", "a-b", "b/c", "x.sh"} {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a/x", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	src, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	pl := Placement{Dest: "/srv/files/", FileMode: 0o600, UID: 7, GID: 8, LinkAs: LinkDir}
	for _, tc := range []struct {
		name   string
		before []string
		dest   string
	}{
		{"empty", nil, "/srv/files/"},
		{"beside others", []string{"srv/other", "etc/x", "srv/files-1/y"}, "/srv/files/"},
		{"at the root", nil, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := New(), New()
			for _, p := range tc.before {
				for _, tr := range []*Tree{got, want} {
					if err := tr.Add(Entry{Path: p, Kind: File}); err != nil {
						t.Fatal(err)
					}
				}
			}
			pl := pl
			pl.Dest = tc.dest
			if err := got.Place(src, pl); err != nil {
				t.Fatal(err)
			}
			dest, _ := CleanPath(tc.dest)
			if dest != "." {
				if err := want.Add(Entry{Path: dest, Kind: Dir, Mode: 0o755, UID: 7, GID: 8}); err != nil {
					t.Fatal(err)
				}
			}
			for e := range src.All() {
				e.Path = path.Join(dest, e.Path)
				if err := want.add(e, pl); err != nil {
					t.Fatal(err)
				}
			}
			if g, w := got.Entries(), want.Entries(); !reflect.DeepEqual(g, w) {
				t.Errorf("placed:\n%v\nadded:\n%v", g, w)
			}
			if !reflect.DeepEqual(got.parents, want.parents) {
				t.Errorf("parents %v, want %v", got.parents, want.parents)
			}
			// Moved, the entries of a tree of its own are the same, and
			// it is left empty.
			moved := New()
			for _, p := range tc.before {
				if err := moved.Add(Entry{Path: p, Kind: File}); err != nil {
					t.Fatal(err)
				}
			}
			taken, err := FromDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := moved.Move(taken, pl); err != nil {
				t.Fatal(err)
			}
			if g, w := moved.Entries(), got.Entries(); !reflect.DeepEqual(g, w) {
				t.Errorf("moved:\n%v\nplaced:\n%v", g, w)
			}
			if !reflect.DeepEqual(moved.parents, got.parents) {
				t.Errorf("moved: parents %v, want %v", moved.parents, got.parents)
			}
			if n := taken.Len(); n != 0 || len(taken.Entries()) != 0 {
				t.Errorf("the tree moved still holds %d entries", n)
			}
			// What Add refuses after adding each, it refuses after placing.
			for _, e := range []Entry{{Path: dest + "/a/x/under", Kind: File}, {Path: dest + "/a", Kind: File}, {Path: dest + "/a/x", Kind: File}} {
				if err := got.Add(e); err == nil {
					t.Errorf("%s: added after the placement", e.Path)
				}
				if err := moved.Add(e); err == nil {
					t.Errorf("%s: added after the move", e.Path)
				}
			}
		})
	}
}

// A tree of many files is read by several image builds at once: looking
// paths up while others walk it is safe (go test -race), and finds every
// entry FromDir and Place added.
func TestLookupsWhileWalking(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		p := filepath.Join(dir, "d", strings.Repeat("x", i%7), "f"+strings.Repeat("y", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	placed := New()
	if err := placed.Place(src, Placement{Dest: "/srv/"}); err != nil {
		t.Fatal(err)
	}
	for _, tr := range []*Tree{src, placed} {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				n := 0
				for e := range tr.All() {
					if got, ok := tr.Get(e.Path); !ok || got.Path != e.Path {
						t.Errorf("%s: not found", e.Path)
					}
					n++
				}
				if n < tr.Len() {
					t.Errorf("walked %d entries of %d", n, tr.Len())
				}
			})
		}
		wg.Wait()
	}
}

// ImpliedRootOwned leaves the directories an archive only implies 0:0,
// placed into a new directory (placeNew) or beside what is there (add);
// without it, as a recipe places an archive, they get UID and GID too.
func TestPlaceImpliedRootOwned(t *testing.T) {
	src := New()
	for _, e := range []Entry{
		{Path: "k", Kind: Dir, Mode: 0o755}, {Path: "k/y", Kind: File, Mode: 0o644},
		{Path: "t", Kind: Dir, Mode: 0o755}, {Path: "t/x", Kind: File, Mode: 0o644},
	} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	src.Imply(func(p string) bool { return p == "t" })
	for _, rootOwned := range []bool{false, true} {
		for _, before := range [][]string{nil, {"u/other"}} {
			dst := New()
			for _, p := range before {
				if err := dst.Add(Entry{Path: p, Kind: File, Mode: 0o644}); err != nil {
					t.Fatal(err)
				}
			}
			if err := dst.Place(src, Placement{Dest: "/u/", UID: 5, GID: 6, ImpliedRootOwned: rootOwned}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range dst.Entries() {
				got = append(got, fmt.Sprintf("%s %d:%d", e.Path, e.UID, e.GID))
			}
			want := []string{"u 5:6", "u/k 5:6", "u/k/y 5:6", "u/t 5:6", "u/t/x 5:6"}
			if rootOwned {
				want[3] = "u/t 0:0"
			}
			if before != nil {
				want = slices.Insert(want, 3, "u/other 0:0")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ImpliedRootOwned %v, before %v: placed %q, want %q", rootOwned, before, got, want)
			}
		}
	}
}

// TestPlaceStageDest places what a Dockerfile COPY --from copies of a
// stage: below its destination, the directories it copies and makes are
// the stage's (DirMode, UID, OwnNewDirs); the destination and those above
// it are StageMade, as BuildKit's MkdirAll makes them.
func TestPlaceStageDest(t *testing.T) {
	src := New()
	for _, e := range []Entry{{Path: "sub", Kind: Dir, Mode: 0o755}, {Path: "sub/f", Kind: File, Mode: 0o644}} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pl   Placement
		want []string
	}{
		{Placement{Dest: "/e/", DirMode: 0o700, UID: 5, GID: 6, StageDest: "/e", StageMade: DirMeta{Mode: 0o755}},
			[]string{"e 755 0:0", "e/sub 700 5:6", "e/sub/f 644 5:6"}},
		{Placement{Dest: "/a/e/", DirMode: 0o700, UID: 9, GID: 9, OwnNewDirs: true, StageDest: "/a/e", StageMade: DirMeta{Mode: 0o755, UID: 9, GID: 9}},
			[]string{"a 755 9:9", "a/e 755 9:9", "a/e/sub 700 9:9", "a/e/sub/f 644 9:9"}},
		{Placement{Dest: "/e/b/c/", DirMode: 0o700, UID: 5, GID: 6, OwnNewDirs: true, StageDest: "/e", StageMade: DirMeta{Mode: 0o755}},
			[]string{"e 755 0:0", "e/b 700 5:6", "e/b/c 700 5:6", "e/b/c/sub 700 5:6", "e/b/c/sub/f 644 5:6"}},
		{Placement{Dest: "/e/b/c/", DirMode: 0o700, UID: 5, GID: 6, StageDest: "/e", StageMade: DirMeta{Mode: 0o755}},
			[]string{"e 755 0:0", "e/b 700 0:0", "e/b/c 700 0:0", "e/b/c/sub 700 5:6", "e/b/c/sub/f 644 5:6"}},
	} {
		dst := New()
		if err := dst.Place(src, tc.pl); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range dst.Entries() {
			got = append(got, fmt.Sprintf("%s %o %d:%d", e.Path, e.Mode, e.UID, e.GID))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: placed %q, want %q", tc.pl, got, tc.want)
		}
	}
}

// TestPlaceStageDestMade: a directory an earlier placement of a COPY
// --from made is left as it made it, and StageDirs makes those
// below StageDest.
func TestPlaceStageDestMade(t *testing.T) {
	src := New()
	for _, e := range []Entry{{Path: "sub", Kind: Dir, Mode: 0o755}, {Path: "sub/f", Kind: File, Mode: 0o644}} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	one := New()
	if err := one.Add(Entry{Path: "f", Kind: File, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	dst := New()
	if err := dst.Place(one, Placement{Dest: "/e/x/f", DirMode: 0o700, StageDest: "/e", StageMade: DirMeta{Mode: 0o755}}); err != nil {
		t.Fatal(err)
	}
	if err := dst.Place(src, Placement{Dest: "/e/x/", StageDest: "/e", StageMade: DirMeta{Mode: 0o755}}); err != nil {
		t.Fatal(err)
	}
	if err := dst.Place(src, Placement{Dest: "/z/x/y/", DirMode: 0o700, UID: 5, GID: 6, OwnNewDirs: true, StageDest: "/z", StageMade: DirMeta{Mode: 0o755}, StageDirs: map[string]DirMeta{"z/x": {Mode: 0o755}, "z/x/y": {Mode: 0o755}}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range dst.Entries() {
		got = append(got, fmt.Sprintf("%s %o %d:%d", e.Path, e.Mode, e.UID, e.GID))
	}
	want := []string{"e 755 0:0", "e/x 700 0:0", "e/x/f 700 0:0", "e/x/sub 755 0:0", "e/x/sub/f 644 0:0",
		"z 755 0:0", "z/x 755 0:0", "z/x/y 755 0:0", "z/x/y/sub 700 5:6", "z/x/y/sub/f 644 5:6"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placed %q, want %q", got, want)
	}
}

// Each entry a placement puts in a tree, the directories it makes on its
// way too, carries its Mark, and an entry added that meets one placed
// before says which: the entry met at its path, at its parent, or below
// it (the first by path there).
func TestCollisionSaysPlacedBy(t *testing.T) {
	one := func(p string) *Tree {
		src := New()
		if err := src.Add(Entry{Path: p, Kind: File, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		return src
	}
	tests := []struct {
		name        string
		first, then string // the file each places (dest)
		held        string
		want        string
	}{
		{"twice", "k/x", "k/x", "k/x", "k/x: placed twice (file and file)"},
		{"under a file", "k/x", "k/x/y", "k/x", "k/x/y: parent k/x is a file"},
		{"over a directory", "k/x/z", "k/x", "k/x/z", "k/x: placed as a file where a directory holds other entries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			// Mark 1 places elsewhere, so that the entry met is not
			// the tree's first.
			if err := tr.Place(one("other"), Placement{Dest: "/k/", Mark: 1}); err != nil {
				t.Fatal(err)
			}
			if err := tr.Place(one("f"), Placement{Dest: "/" + tc.first, Mark: 2}); err != nil {
				t.Fatal(err)
			}
			for _, e := range tr.Entries() {
				// A directory only implied is no placement's.
				want := map[string]uint16{"k": 1, "k/other": 1, tc.first: 2}[e.Path]
				if e.PlacedBy != want {
					t.Errorf("%s: PlacedBy %d, want %d", e.Path, e.PlacedBy, want)
				}
			}
			err := tr.Place(one("f"), Placement{Dest: "/" + tc.then, Mark: 3})
			var c *Collision
			if !errors.As(err, &c) {
				t.Fatalf("got %v, want a *Collision", err)
			}
			if c.Held.Path != tc.held || c.Held.PlacedBy != 2 || err.Error() != tc.want {
				t.Errorf("got %q meeting %s placed by %d, want %q meeting %s placed by 2", err, c.Held.Path, c.Held.PlacedBy, tc.want, tc.held)
			}
		})
	}
	// The directories a placement makes on its way are its own.
	tr := New()
	if err := tr.Place(one("f"), Placement{Dest: "/m/n/f", DirMode: 0o700, Mark: 4}); err != nil {
		t.Fatal(err)
	}
	for _, e := range tr.Entries() {
		if e.PlacedBy != 4 {
			t.Errorf("%s: PlacedBy %d, want 4", e.Path, e.PlacedBy)
		}
	}
	// Which placement put an entry is not written: trees that differ
	// in it alone are the same layer.
	a, b := New(), New()
	if err := a.Place(one("f"), Placement{Dest: "/x", Mark: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Place(one("f"), Placement{Dest: "/x", Mark: 2}); err != nil {
		t.Fatal(err)
	}
	if !Same(a, b) {
		t.Error("trees differing only in PlacedBy are not Same")
	}
}

// A build holds an Entry per file, two while it places an artifact: its
// fields are ordered so that they pack with no padding between them.
func TestEntrySize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size is a 64-bit platform's")
	}
	if got := unsafe.Sizeof(Entry{}); got > 152 {
		t.Errorf("Entry is %d bytes, want at most 152: a field added or moved pads it", got)
	}
}
