package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// A merged-/usr base, with links that are absolute, relative, chained,
// and climbing out of the root.
var mergedUsr = Links{
	"bin":            "usr/bin",
	"lib":            "/usr/lib",
	"sbin":           "bin", // to a link
	"var/run":        "../run",
	"opt/up":         "../../../../srv",
	"usr/lib/latest": "./v2",
	"odd/x":          "/usr/lib",
	"odd/l":          "x/../y",
	"odd/m":          "../odd/x/../../z",
	"odd/n":          "../../..",
}

func TestLinksResolve(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"bin", "usr/bin"},
		{"bin/x", "usr/bin/x"},
		{"sbin/x", "usr/bin/x"},
		{"lib/latest/y", "usr/lib/v2/y"},
		{"var/run/z", "run/z"},
		{"opt/up/a", "srv/a"},
		{"usr/bin", "usr/bin"},
		{"binary/x", "binary/x"}, // a name that starts like a link
		{"etc", "etc"},
		{".", "."},
		// A target's ".." is taken lexically, as continuity's RootPath
		// takes it, not after the link before it.
		{"odd/l", "odd/y"},
		{"odd/m/f", "z/f"},
		{"odd/n", "."},
	} {
		got, err := mergedUsr.Resolve(c.in)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	loop := Links{"a": "b", "b": "a"}
	if _, err := loop.Resolve("a/x"); err == nil || !strings.Contains(err.Error(), "links to follow") {
		t.Errorf("a loop resolved: %v", err)
	}
}

// IsDir answers for a directory, a link that leads to one, and nothing
// else: a dangling link, a loop, a name the view does not hold.
func TestViewIsDir(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin", "sbin": "bin", "var/run": "/run", "a": "b", "b": "a", "up": "../.."},
		Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}, "tmp": {Mode: 0o1777}}}
	for p, want := range map[string]bool{
		"usr/bin": true, "bin": true, "sbin": true, "tmp": true, ".": true, "up": true,
		"var/run": false, "a": false, "etc": false, "usr/bin/sh": false,
	} {
		if got := v.IsDir(p); got != want {
			t.Errorf("IsDir(%q) = %v, want %v", p, got, want)
		}
	}
	if (*View)(nil).IsDir("usr") {
		t.Error("an empty view holds a directory")
	}
}

func TestThroughMovesEntriesUnderLinks(t *testing.T) {
	src := New()
	for _, e := range []Entry{
		{Path: "app", Kind: File, Source: "/src/app", Mode: 0o755},
		{Path: "lib/systemd/system/app.service", Kind: File, Source: "/src/unit", Mode: 0o644},
		{Path: "var/run/app", Kind: Dir, Mode: 0o700},
	} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	tr := New()
	if err := tr.Place(src, Placement{Dest: "/"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Place(src, Placement{Dest: "/bin/", From: "app"}); err != nil {
		t.Fatal(err)
	}
	// A link placed where the base has one replaces it, as written.
	if err := tr.Add(Entry{Path: "sbin", Kind: Symlink, Link: "usr/sbin"}); err != nil {
		t.Fatal(err)
	}
	got, err := tr.Through(&View{Links: mergedUsr})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app", "run", "run/app", "sbin", "usr", "usr/bin", "usr/bin/app", "usr/lib", "usr/lib/systemd", "usr/lib/systemd/system", "usr/lib/systemd/system/app.service", "var"}
	if p := paths(got.Entries()); !reflect.DeepEqual(p, want) {
		t.Errorf("paths %q\nwant  %q", p, want)
	}
	if e, _ := got.Get("run/app"); e == nil || e.Mode != 0o700 {
		t.Errorf("run/app kept no metadata: %+v", e)
	}
	if e, _ := got.Get("usr/bin/app"); e == nil || e.Source != "/src/app" {
		t.Errorf("usr/bin/app: %+v", e)
	}
	if e, _ := got.Get("sbin"); e == nil || e.Kind != Symlink || e.Link != "usr/sbin" {
		t.Errorf("sbin: %+v", e)
	}
	// A tree that goes through no link is the tree itself.
	plain := New()
	if err := plain.Add(Entry{Path: "usr/local/bin/x", Kind: File}); err != nil {
		t.Fatal(err)
	}
	if got, err := plain.Through(&View{Links: mergedUsr}); err != nil || got != plain {
		t.Errorf("an untouched tree was rebuilt: %v", err)
	}
}

func TestThroughRefusesTwoNamesForOneFile(t *testing.T) {
	tr := New()
	for _, p := range []string{"bin/x", "usr/bin/x"} {
		if err := tr.Add(Entry{Path: p, Kind: File}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := tr.Through(&View{Links: mergedUsr})
	if err == nil || !strings.Contains(err.Error(), "/bin/x and /usr/bin/x are one path in the image, /usr/bin/x") {
		t.Errorf("err = %v", err)
	}
}

// Directories the image holds keep their mode and owner, whether the
// layer names them or only implies them; a file where one is is refused.
func TestThroughKeepsDirectories(t *testing.T) {
	v := &View{
		Links: Links{"var/tmp": "/tmp"},
		Dirs: map[string]DirMeta{
			"tmp":           {Mode: 0o777 | fs.ModeSticky},
			"usr":           {Mode: 0o755},
			"usr/local":     {Mode: 0o2775&0o777 | fs.ModeSetgid, GID: 50},
			"usr/local/bin": {Mode: 0o755},
			"home/app":      {Mode: 0o700, UID: 1000, GID: 1000},
		},
	}
	tr := New()
	src := New()
	if err := src.Add(Entry{Path: "x", Kind: File, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{"/var/tmp/", "/usr/local/bin/", "/home/app/.config/"} {
		if err := tr.Place(src, Placement{Dest: dest, UID: 7, GID: 7}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tr.Through(v)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]DirMeta{
		"tmp":              v.Dirs["tmp"],
		"usr/local":        v.Dirs["usr/local"],
		"usr/local/bin":    {Mode: 0o755}, // the base's, not the placement's owner
		"home/app":         v.Dirs["home/app"],
		"home/app/.config": {Mode: 0o755, UID: 7, GID: 7}, // new: the placement's
	} {
		e, ok := got.Get(p)
		if !ok {
			// An implied parent with the default metadata need not be
			// written out: Entries synthesizes it the same.
			if want == defaultDir {
				continue
			}
			t.Errorf("%s: missing", p)
			continue
		}
		if m := (DirMeta{Mode: e.Mode, UID: e.UID, GID: e.GID}); m != want {
			t.Errorf("%s: %+v, want %+v", p, m, want)
		}
	}
	if _, ok := got.Get("var"); ok {
		t.Error("var/ written: the link var/tmp was not followed")
	}

	file := New()
	if err := file.Add(Entry{Path: "usr/local/bin", Kind: File}); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Through(v); err == nil || !strings.Contains(err.Error(), "/usr/local/bin: a file placed where the image already holds a directory") {
		t.Errorf("file onto a directory: %v", err)
	}
}

// With applies a layer over a view: its links and directories are added,
// and what it puts at a path replaces what was there.
func TestViewWith(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin", "opt/cur": "v1"}, Dirs: map[string]DirMeta{"usr/bin": {Mode: 0o755}, "opt": {Mode: 0o755}},
		FileLinks: Links{"etc/a": "b", "keep": "etc/b"}}
	layer := New()
	for _, e := range []Entry{
		{Path: "bin", Kind: Symlink, Link: "/opt"},
		{Path: "etc/a", Kind: File},
		{Path: "opt/cur", Kind: Dir, Mode: 0o750, UID: 3},
		{Path: "usr/bin", Kind: File},
	} {
		if err := layer.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	w := v.With(layer)
	// usr, a parent the layer only implies, is not a directory of the
	// view: a later layer that names it sets its mode and owner. It is
	// there for one that makes it only if new (Entry.IfNew).
	want := &View{Links: Links{"bin": "/opt"}, Dirs: map[string]DirMeta{"opt": {Mode: 0o755}, "opt/cur": {Mode: 0o750, UID: 3}},
		Implied: map[string]bool{"usr": true, "etc": true}, Files: map[string]bool{"usr/bin": true, "etc/a": true}, FileLinks: Links{"keep": "etc/b"}}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("view %+v\nwant %+v", w, want)
	}
	if len(v.Links) != 2 {
		t.Error("With changed the view it was given")
	}
}

// A placement with OwnNewDirs owns the directories it makes on its way,
// as Docker's COPY --chown makes them, and leaves those the image holds:
// the base's, those a lower layer names, and those it only implies.
func TestOwnNewDirs(t *testing.T) {
	file := New()
	if err := file.Add(Entry{Path: "f", Kind: File, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	dir := New()
	if err := dir.Add(Entry{Path: "sub/y", Kind: File, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	lower := New()
	if err := lower.Place(file, Placement{Dest: "/old/deep/f"}); err != nil {
		t.Fatal(err)
	}
	v := (&View{Links: Links{"bin": "usr/bin"}, Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755},
		"home": {Mode: 0o700, UID: 3, GID: 3}}}).With(lower)
	tr := New()
	for _, p := range []struct {
		src  *Tree
		dest string
	}{{file, "/new/a/f"}, {file, "/old/deep/g"}, {file, "/bin/x/f"}, {dir, "/home/app/"}, {dir, "/old/"}, {file, "/new/a/b/f"}} {
		if err := tr.Place(p.src, Placement{Dest: p.dest, UID: 7, GID: 8, OwnNewDirs: true}); err != nil {
			t.Fatal(err)
		}
	}
	// A later placement names a directory an earlier one made: it sets it.
	if err := tr.Place(file, Placement{Dest: "/new/", UID: 9, GID: 9}); err != nil {
		t.Fatal(err)
	}
	got, err := tr.Through(v)
	if err != nil {
		t.Fatal(err)
	}
	owned := DirMeta{Mode: 0o755, UID: 7, GID: 8}
	for p, want := range map[string]DirMeta{
		"new":          {Mode: 0o755, UID: 9, GID: 9},
		"new/a":        owned,
		"new/a/b":      owned,
		"old":          defaultDir, // implied by the lower layer
		"old/deep":     defaultDir,
		"usr/bin":      defaultDir, // the base's, through its link
		"usr/bin/x":    owned,
		"home":         v.Dirs["home"],
		"home/app":     owned,
		"home/app/sub": owned, // the tree's own: the placement's owner
		"old/sub":      owned,
	} {
		m := defaultDir
		if e, ok := got.Get(p); ok {
			m = e.meta()
		}
		if m != want {
			t.Errorf("%s: %+v, want %+v", p, m, want)
		}
	}
	if _, ok := got.Get("bin"); ok {
		t.Error("bin written: the link was not followed")
	}
	// Without it, the parents are implied: 0755 0:0.
	plain := New()
	if err := plain.Place(file, Placement{Dest: "/p/q/f", UID: 7, GID: 7}); err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Get("p/q"); ok {
		t.Error("a parent of a placement without OwnNewDirs is written out")
	}
}

// A file placed at a link is refused with what the link is: one to a
// directory, or one that leads nowhere, whose target Docker's COPY
// would write the file at.
func TestThroughFileAtLink(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin", "x": "/nowhere", "y": "../gone/deeper"}, Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}}}
	for p, want := range map[string]string{
		"bin": "/bin: a file placed where the image holds a link to a directory (usr/bin)",
		"x":   "/x: a file placed where the image holds a dangling link (to /nowhere, which the image does not hold) would replace the link; Docker's COPY writes the file where the link leads: make /nowhere the destination",
		"y":   "dangling link (to ../gone/deeper, which the image does not hold) would replace the link; Docker's COPY writes the file where the link leads: make /gone/deeper the destination",
	} {
		tr := New()
		if err := tr.Add(Entry{Path: p, Kind: File}); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Through(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a file at %s: %v, want %q", p, err, want)
		}
	}
}

// A file marked ReplaceLink (a Dockerfile's, below its destination) at a
// link replaces the link, wherever it leads, and nothing is placed where
// it leads; unmarked (a recipe's), it is refused as before.
func TestThroughFileReplacesLink(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin", "d": "usr", "usr/l": "bin", "x": "/nowhere"}, Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}}}
	for p, want := range map[string]string{"bin": "bin", "x": "x", "d/l": "usr/l"} {
		for _, replace := range []bool{false, true} {
			tr := New()
			if err := tr.Add(Entry{Path: p, Kind: File, Mode: 0o644, ReplaceLink: replace}); err != nil {
				t.Fatal(err)
			}
			got, err := tr.Through(v)
			if !replace {
				if err == nil {
					t.Errorf("a file at %s, not marked: placed", p)
				}
				continue
			}
			if err != nil {
				t.Fatalf("a file at %s: %v", p, err)
			}
			var paths []string
			for _, e := range got.Entries() {
				if e.Kind == File {
					paths = append(paths, e.Path)
				}
			}
			if !reflect.DeepEqual(paths, []string{want}) {
				t.Errorf("a file at %s: files %q, want %q", p, paths, want)
			}
		}
	}
}

// A directory placed where the image holds a file, or a file placed
// under one, is refused: the layer would replace the file with a
// directory, where Docker's COPY fails. A file over a file replaces it.
func TestThroughDirOverFile(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin"}, Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}},
		Files: map[string]bool{"etc/passwd": true, "usr/bin/sh": true}}
	lower := New()
	if err := lower.Add(Entry{Path: "opt/k", Kind: File}); err != nil {
		t.Fatal(err)
	}
	v = v.With(lower)
	for _, c := range []struct {
		e    Entry
		want string
	}{
		{Entry{Path: "etc/passwd", Kind: Dir, Mode: 0o755}, "/etc/passwd: the image holds a file there, and a directory placed there needs it to be a directory"},
		{Entry{Path: "opt/k/f", Kind: File}, "/opt/k: the image holds a file there, and what is placed under it (/opt/k/f) needs it to be a directory"},
		{Entry{Path: "bin/sh/x", Kind: File}, "/usr/bin/sh: the image holds a file there, and what is placed under it (/bin/sh/x)"},
		{Entry{Path: "etc/passwd", Kind: File}, ""},
		{Entry{Path: "opt/k", Kind: File}, ""},
	} {
		tr := New()
		if err := tr.Add(c.e); err != nil {
			t.Fatal(err)
		}
		_, err := tr.Through(v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s (%s): %v, want %q", c.e.Path, c.e.Kind, err, c.want)
		}
	}
}

// A placement marked NoLinksBelow goes through the image's links on its
// way to that destination, and not below it: a directory it copies where
// the image holds a link is refused, as Docker's COPY fails there (cannot
// copy to non-directory). Unmarked (a recipe's), it goes through.
func TestThroughNoLinksBelow(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin", "opt": "srv", "srv/x/lib": "/usr/lib"}, Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}, "usr/lib": {Mode: 0o755}, "srv": {Mode: 0o755}, "srv/x": {Mode: 0o755}}}
	src := New()
	for _, e := range []Entry{{Path: "bin/y", Kind: File}, {Path: "lib/z", Kind: File}} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		pl   Placement
		want string // an error, or the paths placed
	}{
		{Placement{Dest: "/", NoLinksBelow: "/"}, "/bin: a directory copied where the image holds a link (to usr/bin)"},
		{Placement{Dest: "/opt/x/", NoLinksBelow: "/opt/x"}, "/opt/x/lib: a directory copied where the image holds a link (/srv/x/lib, to /usr/lib)"},
		// The stage's directory bin is copied with the others, below the COPY's destination.
		{Placement{Dest: "/bin/", From: "bin", NoLinksBelow: "/"}, "/bin: a directory copied where the image holds a link"},
		{Placement{Dest: "/bin/", From: "bin", NoLinksBelow: "/bin"}, "usr usr/bin usr/bin/y"},
		{Placement{Dest: "/opt/", NoLinksBelow: "/opt"}, "srv srv/bin srv/bin/y srv/lib srv/lib/z"},
		{Placement{Dest: "/"}, "lib lib/z usr usr/bin usr/bin/y"},
	} {
		tr := New()
		if err := tr.Place(src, c.pl); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Through(v)
		var li *LinkInside
		switch {
		case err != nil && !errors.As(err, &li):
			t.Errorf("%+v: %v", c.pl, err)
		case err != nil:
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want %q", c.pl, err, c.want)
			}
		case strings.Join(paths(got.Entries()), " ") != c.want:
			t.Errorf("%+v: placed %q, want %q", c.pl, paths(got.Entries()), c.want)
		}
	}
}

// A directory an archive only implies (Entry.Implied) goes through the
// image's link where the placement copies it, as Docker's ADD unpacks
// through it; one the archive holds, or a link that leads nowhere, is
// still refused.
func TestThroughNoLinksBelowImplied(t *testing.T) {
	v := &View{Links: Links{"bin": "usr/bin", "sbin": "nowhere"}, Dirs: map[string]DirMeta{"usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}}}
	for _, c := range []struct {
		dir     string
		implied bool
		want    string // an error, or the paths placed
	}{
		{"bin", true, "usr usr/bin usr/bin/y"},
		{"bin", false, "/bin: a directory copied where the image holds a link (to usr/bin)"},
		{"sbin", true, "/sbin: a directory copied where the image holds a link (to nowhere)"},
	} {
		src := New()
		for _, e := range []Entry{{Path: c.dir, Kind: Dir, Mode: 0o755, Implied: c.implied}, {Path: c.dir + "/y", Kind: File}} {
			if err := src.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		tr := New()
		if err := tr.Place(src, Placement{Dest: "/", NoLinksBelow: "/"}); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Through(v)
		switch {
		case err != nil && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s implied=%v: %v, want %q", c.dir, c.implied, err, c.want)
		case err == nil && strings.Join(paths(got.Entries()), " ") != c.want:
			t.Errorf("%s implied=%v: placed %q, want %q", c.dir, c.implied, paths(got.Entries()), c.want)
		}
	}
}

// A file placed with FollowLink at a link that leads nowhere lands where
// the link leads, within the root; without it, or at a link to a
// directory, it is refused.
func TestThroughFollowLink(t *testing.T) {
	v := &View{Links: Links{"x": "/a/b", "lib/y": "../../../c", "bin": "usr/bin"}, Dirs: map[string]DirMeta{"lib": {Mode: 0o755}, "usr": {Mode: 0o755}, "usr/bin": {Mode: 0o755}}}
	src := New()
	if err := src.Add(Entry{Path: "f", Kind: File}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pl   Placement
		want string // an error, or the paths placed
	}{
		{Placement{Dest: "/x", FollowLink: true}, "a a/b"},
		{Placement{Dest: "/lib/y", FollowLink: true}, "c"},
		{Placement{Dest: "/x"}, "/x: a file placed where the image holds a dangling link"},
		{Placement{Dest: "/bin", FollowLink: true}, "/bin: a file placed where the image holds a link to a directory"},
	} {
		tr := New()
		if err := tr.Place(src, c.pl); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Through(v)
		switch {
		case err != nil && !strings.Contains(err.Error(), c.want):
			t.Errorf("%+v: %v, want %q", c.pl, err, c.want)
		case err == nil && strings.Join(paths(got.Entries()), " ") != c.want:
			t.Errorf("%+v: placed %q, want %q", c.pl, paths(got.Entries()), c.want)
		}
	}
}

// A file placed with FollowLink at a link of the base to a file (or at a
// link to such a link) lands on the file it leads to; without it, as a
// recipe places it, it replaces the link.
func TestThroughFollowFileLink(t *testing.T) {
	v := &View{
		Links:     Links{"ln": "o"},
		FileLinks: Links{"etc/os-release": "../usr/lib/os-release", "o": "etc/os-release"},
		Dirs:      map[string]DirMeta{"etc": {Mode: 0o755}, "usr": {Mode: 0o755}, "usr/lib": {Mode: 0o755}},
		Files:     map[string]bool{"usr/lib/os-release": true},
	}
	src := New()
	if err := src.Add(Entry{Path: "f", Kind: File}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pl   Placement
		want string // the paths placed
	}{
		{Placement{Dest: "/etc/os-release", FollowLink: true}, "usr usr/lib usr/lib/os-release"},
		{Placement{Dest: "/o", FollowLink: true}, "usr usr/lib usr/lib/os-release"},
		{Placement{Dest: "/ln", FollowLink: true}, "usr usr/lib usr/lib/os-release"},
		{Placement{Dest: "/etc/os-release"}, "etc etc/os-release"},
	} {
		tr := New()
		if err := tr.Place(src, c.pl); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Through(v)
		if err != nil {
			t.Errorf("%+v: %v", c.pl, err)
		} else if strings.Join(paths(got.Entries()), " ") != c.want {
			t.Errorf("%+v: placed %q, want %q", c.pl, paths(got.Entries()), c.want)
		}
	}
}

// A directory a placement with CopiedDirs copies where the image holds
// one is placed as copied; the destination, and the directories of a
// placement without it, keep the image's mode and owner.
func TestThroughCopiedDirs(t *testing.T) {
	sticky := DirMeta{Mode: 0o1770, UID: 3, GID: 4}
	v := &View{Links: Links{}, Dirs: map[string]DirMeta{"opt": sticky, "opt/sub": sticky}}
	src := New()
	for _, e := range []Entry{{Path: "sub", Kind: Dir, Mode: 0o755}, {Path: "sub/f", Kind: File, Mode: 0o644}} {
		if err := src.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, copied := range []bool{false, true} {
		tr := New()
		if err := tr.Place(src, Placement{Dest: "/opt/", CopiedDirs: copied}); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Through(v)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]DirMeta{"opt": sticky, "opt/sub": sticky}
		if copied {
			want["opt/sub"] = DirMeta{Mode: 0o755}
		}
		for _, e := range got.Entries() {
			if m, ok := want[e.Path]; ok && e.meta() != m {
				t.Errorf("CopiedDirs=%v: %s is %+v, want %+v", copied, e.Path, e.meta(), m)
			}
		}
	}
}

// A directory a Dockerfile's placement (CopiedDirs) makes new in a
// setgid directory takes its bit and group, unless Chowned; a recipe's
// placement writes its directories as placed.
func TestThroughSetgidParent(t *testing.T) {
	v := &View{Links: Links{}, Dirs: map[string]DirMeta{"srv": {Mode: 0o775 | fs.ModeSetgid, GID: 50}}}
	src := New()
	if err := src.Add(Entry{Path: "f", Kind: File, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pl   Placement
		want string
	}{
		{Placement{Dest: "/srv/a/b/", CopiedDirs: true}, "srv grwxrwxr-x 0:50, srv/a grwxr-xr-x 0:50, srv/a/b grwxr-xr-x 0:50, srv/a/b/f -rw-r--r-- 0:0"},
		{Placement{Dest: "/srv/a/", CopiedDirs: true, UID: 3, GID: 3, OwnNewDirs: true}, "srv grwxrwxr-x 0:50, srv/a grwxr-xr-x 3:3, srv/a/f -rw-r--r-- 3:3"},
		{Placement{Dest: "/srv/a/"}, "srv grwxrwxr-x 0:50, srv/a -rwxr-xr-x 0:0, srv/a/f -rw-r--r-- 0:0"},
	} {
		tr := New()
		if err := tr.Place(src, c.pl); err != nil {
			t.Fatal(err)
		}
		got, err := tr.Through(v)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range got.Entries() {
			lines = append(lines, fmt.Sprintf("%s %v %d:%d", e.Path, e.Mode, e.UID, e.GID))
		}
		if s := strings.Join(lines, ", "); s != c.want {
			t.Errorf("%+v: placed %s, want %s", c.pl, s, c.want)
		}
	}
}

func TestResolveWithinBudget(t *testing.T) {
	l := Links{"a": "b/c", "b": "d"}
	b := &Budget{Left: 1 << 10}
	if r, err := l.ResolveWithin("a/x", b); err != nil || r != "d/c/x" {
		t.Fatalf("ResolveWithin = %q, %v", r, err)
	}
	spent := (1 << 10) - b.Left
	if spent <= 0 || spent > 64 {
		t.Errorf("a/x cost %d bytes", spent)
	}
	b.Left = spent - 1
	if _, err := l.ResolveWithin("a/x", b); !errors.Is(err, ErrLinkWork) {
		t.Errorf("past the budget: %v", err)
	}
}
