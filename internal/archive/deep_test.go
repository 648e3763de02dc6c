package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// deepTar is a tar of n one-byte files named name(i, mid), where mid is
// depth-1 "d/" components, so that "a/"+mid+"f" is depth directories deep.
func deepTar(t testing.TB, n, depth int, name func(i int, mid string) string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mid := strings.Repeat("d/", depth-1)
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: name(i, mid), Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func oneDir(i int, mid string) string { return fmt.Sprintf("a/%sf%d", mid, i) }

func twoBranches(i int, mid string) string { return fmt.Sprintf("%c/%sf%d", 'a'+i%2, mid, i) }

func freshChains(i int, mid string) string { return fmt.Sprintf("%d/%sf", i, mid) }

// countDirs counts the directories under dir.
func countDirs(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGroupedEntriesOpenEachDirectoryOnce extracts archives whose entries
// come grouped by directory, as tools write them, with MaxEntries at
// their entry count. That allows maxWalks directories to be opened; had
// extraction walked down from the root for every entry, as it once did,
// these would need many times more.
func TestGroupedEntriesOpenEachDirectoryOnce(t *testing.T) {
	// chains is n directory chains of the given depth, with a file at
	// every level and, if dirs, an entry for every directory.
	chains := func(n, depth int, dirs bool) []ent {
		var ents []ent
		for c := range n {
			p := fmt.Sprintf("c%d/", c)
			for range depth {
				if dirs {
					ents = append(ents, ent{name: p, typ: tar.TypeDir})
				}
				ents = append(ents, ent{name: p + "f", body: "x"})
				p += "d/"
			}
		}
		return ents
	}
	tests := []struct {
		name  string
		data  []byte
		n     int // entries
		dirs  int // directories
		naive int // directories opened walking from the root for every entry
	}{
		{name: "one deep directory", data: deepTar(t, 1000, maxDepth-1, oneDir),
			n: 1000, dirs: maxDepth - 1, naive: 1000 * (maxDepth - 1)},
		{name: "chains", data: tarBytes(t, chains(50, 20, false)),
			n: 1000, dirs: 1000, naive: 50 * 20 * 21 / 2},
		{name: "chains with directory entries", data: tarBytes(t, chains(50, 20, true)),
			n: 2000, dirs: 1000, naive: 2 * 50 * 20 * 21 / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.naive <= maxWalks(tt.n) {
				t.Fatalf("%d directories opened naively is within the %d allowed: the test shows nothing", tt.naive, maxWalks(tt.n))
			}
			s := newSandbox(t, Tar, tt.data)
			if err := Extract(context.Background(), s.src, Tar, s.out, Options{MaxEntries: tt.n}); err != nil {
				t.Fatal(err)
			}
			if got := countDirs(t, s.out); got != tt.dirs {
				t.Errorf("%d directories extracted, want %d", got, tt.dirs)
			}
		})
	}
}

// TestEntriesAlternatingBetweenDeepDirectories: no order of entries can
// make extraction open more than maxWalks directories, nor make them.
func TestEntriesAlternatingBetweenDeepDirectories(t *testing.T) {
	const depth = 200
	// 100 entries allow 4*100+256 directories: two entries take 400, the
	// third 600, and the fourth goes over.
	opt := Options{MaxEntries: 100}
	mid := strings.Repeat("d/", depth-1)
	for _, tc := range []struct {
		name  string
		path  func(int, string) string
		fails string
	}{
		{"two branches", twoBranches, "b/" + mid + "f3"},
		{"a new chain for every entry", freshChains, "3/" + mid + "f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t, Tar, deepTar(t, 100, depth, tc.path))
			err := Extract(context.Background(), s.src, Tar, s.out, opt)
			want := fmt.Sprintf("extract %s: entry %q: archive makes extraction open or make more than 656 directories (4 for each entry allowed)", s.src, tc.fails)
			if err == nil || err.Error() != want {
				t.Fatalf("error = %v\nwant    %s", err, want)
			}
			if !errors.Is(err, ErrLimit) {
				t.Errorf("error does not match ErrLimit")
			}
			if n := countDirs(t, s.out); n > maxWalks(opt.MaxEntries) {
				t.Errorf("%d directories made, more than the %d allowed", n, maxWalks(opt.MaxEntries))
			}
		})
	}
}

// TestWorkPerEntryDoesNotGrowWithDepth extracts files in one directory
// at depth 1 and at depth 255. os.Root allocates for every component it
// opens, so allocations count the opens: placing each entry by its path
// from the root showed as 760 more allocations per entry at depth 255.
func TestWorkPerEntryDoesNotGrowWithDepth(t *testing.T) {
	const n = 200
	perEntry := func(depth int) float64 {
		s := newSandbox(t, Tar, deepTar(t, n, depth, oneDir))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := Extract(context.Background(), s.src, Tar, s.out, Options{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return float64(after.Mallocs-before.Mallocs) / n
	}
	// The tar reader's long names and their components still cost a
	// few dozen allocations more at depth 255.
	shallow, deep := perEntry(1), perEntry(maxDepth-1)
	if deep > shallow+64 {
		t.Errorf("%.0f allocations per entry at depth %d, %.0f at depth 1", deep, maxDepth-1, shallow)
	}
}

// TestHardLinksAcrossDirectories links files between directories that
// are not all open at once: up, down, across and beside.
func TestHardLinksAcrossDirectories(t *testing.T) {
	ents := []ent{
		{name: "x/y/z/f", body: "f"},
		{name: "x/y/z/beside", typ: tar.TypeLink, link: "x/y/z/f"},
		{name: "x/up", typ: tar.TypeLink, link: "x/y/z/f"},
		{name: "x/y/z/w/down", typ: tar.TypeLink, link: "x/y/z/f"},
		{name: "p/q/across", typ: tar.TypeLink, link: "x/y/z/f"},
		{name: "p/q/after", typ: tar.TypeLink, link: "x/y/z/w/down"},
	}
	s := newSandbox(t, Tar, build(t, Tar, ents))
	if err := Extract(context.Background(), s.src, Tar, s.out, Options{}); err != nil {
		t.Fatal(err)
	}
	orig, err := os.Stat(filepath.Join(s.out, "x/y/z/f"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents[1:] {
		fi, err := os.Stat(filepath.Join(s.out, e.name))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(orig, fi) {
			t.Errorf("%s is not a link to x/y/z/f", e.name)
		}
	}
}

// BenchmarkExtractDeep extracts 20,000 files 200 directories deep. In one
// directory they took 37 s when each entry was placed by its path from
// the root, and take a tenth of that now. Alternating between two
// branches they still open 200 directories each, just within maxWalks;
// each open is now an os.Root of its own, and the whole took 41 s then
// and about half as much again now.
func BenchmarkExtractDeep(b *testing.B) {
	for _, s := range []struct {
		name string
		path func(int, string) string
	}{{"one directory", oneDir}, {"two branches", twoBranches}} {
		b.Run(s.name, func(b *testing.B) {
			data := deepTar(b, 20000, 200, s.path)
			for b.Loop() {
				b.StopTimer()
				sb := newSandbox(b, Tar, data)
				b.StartTimer()
				err := Extract(context.Background(), sb.src, Tar, sb.out, Options{})
				b.Logf("%v", err)
			}
		})
	}
}
