package tree

import (
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
	got, err := tr.Through(mergedUsr)
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
	if got, err := plain.Through(mergedUsr); err != nil || got != plain {
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
	_, err := tr.Through(mergedUsr)
	if err == nil || !strings.Contains(err.Error(), "/bin/x and /usr/bin/x are one path in the image, /usr/bin/x") {
		t.Errorf("err = %v", err)
	}
}
