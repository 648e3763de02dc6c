package artifact

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

var (
	amd64 = platform.Platform{OS: "linux", Arch: "amd64"}
	arm64 = platform.Platform{OS: "linux", Arch: "arm64"}
)

// What is read and unpacked as it is names the same work on every
// platform; a Go build, and a download that differs by platform, do not.
func TestSameWork(t *testing.T) {
	sum := func(c byte) string { return string(make([]byte, 64)) + string(c) }
	for _, tc := range []struct {
		name       string
		x, y       Kind
		same, none bool
	}{
		{"local archive", &Local{Path: "/a.tgz", Extract: &Extract{Strip: 1}}, &Local{Path: "/a.tgz", Extract: &Extract{Strip: 1}}, true, false},
		{"local file", &Local{Path: "/a"}, &Local{Path: "/a"}, true, false},
		{"local strip", &Local{Path: "/a.tgz", Extract: &Extract{Strip: 1}}, &Local{Path: "/a.tgz", Extract: &Extract{}}, false, false},
		{"local path per platform", &Local{Path: "/amd64/runc"}, &Local{Path: "/arm64/runc"}, false, false},
		{"url", &URL{URL: "https://x/a.tgz", SHA256: sum('a')}, &URL{URL: "https://x/a.tgz", SHA256: sum('a')}, true, false},
		{"url per arch", &URL{URL: "https://x/a-amd64.tgz", SHA256: sum('a')}, &URL{URL: "https://x/a-arm64.tgz", SHA256: sum('a')}, false, false},
		{"url pinned per platform", &URL{URL: "https://x/a.tgz", SHA256: sum('a')}, &URL{URL: "https://x/a.tgz", SHA256: sum('b')}, false, false},
		{"git files", &GitFiles{Repo: "r", Commit: "c", Path: "p"}, &GitFiles{Repo: "r", Commit: "c", Path: "p"}, true, false},
		{"module files", &GoModuleFiles{Module: "m", Version: "v1.0.0", Sum: "h1:x", Path: "p"}, &GoModuleFiles{Module: "m", Version: "v1.0.0", Sum: "h1:x", Path: "p"}, true, false},
		{"go build", &Go{Module: "/m"}, &Go{Module: "/m"}, false, true},
	} {
		x := (&Request{Name: "a", Platform: amd64, Kind: tc.x}).SameWork()
		y := (&Request{Name: "a", Platform: arm64, Kind: tc.y}).SameWork()
		if (x == "" || y == "") != tc.none || !tc.none && (x == y) != tc.same {
			t.Errorf("%s: SameWork %q and %q, want same %v, none %v", tc.name, x, y, tc.same, tc.none)
		}
	}
	local := &Local{Path: "/a"}
	x := (&Request{Name: "a", Platform: amd64, Kind: local}).SameWork()
	if y := (&Request{Name: "a", Platform: arm64, Kind: local, Licenses: []string{"COPYING"}}).SameWork(); x == y {
		t.Errorf("requests naming other licence files share their work")
	}
}

// For gives a request the result another's work made: its record names
// its own platform, the rest as it was, and its trees are its own, which
// a layer taking the other's entries (tree.Move) leaves whole.
func TestResultForIsTheRequests(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.tar")
	archive := fixture.Tar([]fixture.File{
		{Name: "bin/tool", Content: "tool", Mode: 0o750, UID: 7},
		{Name: "bin/same", HardLink: "bin/tool"},
		{Name: "LICENSE", Content: "MIT", Mode: 0o644},
	})
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	kind := func() Kind { return &Local{Path: path, Extract: &Extract{Headers: true}} }
	first := &Request{Name: "tools", Platform: amd64, Kind: kind()}
	second := &Request{Name: "tools", Platform: arm64, Kind: kind()}
	res, err := New().Fetch(context.Background(), first, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	entries := res.Tree.Entries()
	got, err := res.For(second)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Record
	want.Platform = "linux/arm64"
	if !reflect.DeepEqual(got.Record, want) || got.Record.SHA256 != fixture.SHA256(archive) {
		t.Errorf("record %+v, want %+v", got.Record, want)
	}
	if !reflect.DeepEqual(got.Tree.Entries(), entries) || !reflect.DeepEqual(got.Licenses.Entries(), res.Licenses.Entries()) {
		t.Errorf("tree %+v, want %+v", got.Tree.Entries(), entries)
	}
	var implied, archived, linked int
	for _, e := range got.Tree.Entries() {
		if e.Implied {
			implied++
		}
		if e.Archived != nil {
			archived++
		}
		if e.Linked != nil {
			linked++
		}
	}
	if implied != 1 || archived == 0 || linked != 2 {
		t.Errorf("the copy has %d implied director(ies), %d entries with headers kept, %d hard-linked; want 1, some, 2", implied, archived, linked)
	}
	if got.Tree.Len() != res.Tree.Len() {
		t.Errorf("the copy holds %d entries of its own, the tree %d", got.Tree.Len(), res.Tree.Len())
	}
	if err := tree.New().Move(res.Tree, tree.Placement{Dest: "/"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Tree.Entries(), entries) {
		t.Errorf("placing the first request's tree emptied the second's: %+v", got.Tree.Entries())
	}
	if res.Record.Platform != "linux/amd64" {
		t.Errorf("the first record now says %s", res.Record.Platform)
	}
}

// A copy holds the entries added to the tree, not the parents listing
// it makes up: added, those would be directories of the artifact's own.
func TestCopyTreeAddsNoParents(t *testing.T) {
	src := tree.New()
	if err := src.Add(tree.Entry{Path: "a/b/c", Kind: tree.File, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	c, err := src.Clone()
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 1 || !reflect.DeepEqual(c.Entries(), src.Entries()) {
		t.Errorf("copy holds %d entries: %+v", c.Len(), c.Entries())
	}
}

// Work the same on every platform is cached once for them all: a build
// of two platforms makes it for the first only, and a build of the
// second alone after it takes it from the cache.
func TestSameWorkCachedForEveryPlatform(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.tar.gz")
	if err := os.WriteFile(path, fixture.TarGz([]fixture.File{{Name: "tool", Content: "tool", Mode: 0o755}}), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	f.Cache = c
	for i, p := range []platform.Platform{amd64, arm64} {
		res, err := f.Fetch(context.Background(), &Request{Name: "tools", Platform: p, NoLicense: true, Kind: &Local{Path: path, Extract: &Extract{}}}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Cached != (i == 1) || res.Record.Platform != p.String() {
			t.Errorf("%s: cached %v, record of %s", p, res.Cached, res.Record.Platform)
		}
	}
	// A Go build is its platform's.
	k := &Go{Module: dir}
	if x, _, _ := f.key(&Request{Name: "a", Platform: amd64, Kind: k}); x == "" {
		t.Skip("no key for the Go build")
	} else if y, _, _ := f.key(&Request{Name: "a", Platform: arm64, Kind: k}); x == y {
		t.Errorf("a Go build is cached for both platforms under one key")
	}
}
