package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// BenchmarkFromDir reads the tree at $PALLET_FROMDIR_BENCH (bench/workload
// gen files DIR 100000 makes one), or 2,000 small files made here.
func BenchmarkFromDir(b *testing.B) {
	dir := os.Getenv("PALLET_FROMDIR_BENCH")
	if dir == "" {
		dir = fixture.SmallFiles(b, 2000, 100)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// fromDirFixture makes n files in directories of 10 under a new directory.
func fromDirFixture(t *testing.T, n int) string { return fixture.SmallFiles(t, n, 10) }

// FromDir reads a directory with few allocations per path: each
// directory is listed once, its paths are one string and its entries one
// slice (before, the walk, filepath.Rel and CleanPath took every path
// apart and built it again: over 9 allocations per entry; then one path
// and one entry each, and os.ReadDir's own).
func TestFromDirAllocations(t *testing.T) {
	dir := fromDirFixture(t, 500)
	entries := 550.0 // 500 files, 50 directories
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := FromDir(dir); err != nil {
			t.Fatal(err)
		}
	})
	// On Linux a directory is listed without os.ReadDir (an allocation
	// or more per name): what is allocated is per directory (0.7 per
	// entry in directories of 10; over 1 under -race, where sync.Pool
	// drops some of what is put back).
	want := 5.0
	if runtime.GOOS == "linux" {
		want = 2
	}
	if per := allocs / entries; per > want {
		t.Errorf("FromDir made %.1f allocations per entry, want at most %.0f", per, want)
	}
}

// A root that is not a directory is an error, as a missing one is: a
// file, or a symlink even to a directory, gave an empty tree, which a
// caller took for a directory holding nothing.
func TestFromDirRoot(t *testing.T) {
	dir := fromDirFixture(t, 3)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{link, filepath.Join(dir, "d00", "f0000")} {
		if _, err := FromDir(root); err == nil || !strings.Contains(err.Error(), root+" is ") || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("%s: %v, want an error naming it, not a directory", root, err)
		}
	}
	if _, err := FromDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("no error for a missing root")
	}
	tr, err := FromDir(dir)
	if err != nil || tr.Len() != 4 {
		t.Errorf("got %v, %v; want 3 files and their directory", tr, err)
	}
}

// A backslash in a name found on disk is a character of the name, as
// Linux and tar keep it (systemd's system-systemd\x2dcryptsetup.slice):
// b\c beside the directory b is a file of its own, not b/c. (Where the
// user writes a path, CleanPath, it separates.)
func TestFromDirBackslashNames(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a backslash is the separator on Windows")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a/b/c", `a/b\c`} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(tr.Entries()), []string{"a", "a/b", "a/b/c", `a/b\c`}; !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	if e, ok := tr.Get(`a/b\c`); !ok || e.Kind != File || e.Source != filepath.Join(dir, "a", `b\c`) {
		t.Errorf(`a/b\c: %+v, %v`, e, ok)
	}
	if p, err := CleanPath(`a\b\c`); err != nil || p != "a/b/c" {
		t.Errorf(`CleanPath(a\b\c) = %q, %v; want a/b/c`, p, err)
	}
}

// Where the separator is a slash, a path in the tree is the end of the
// path on disk, sharing its bytes; whatever the separator, the source of
// a file is the root joined with its path, at every depth, for a root
// given with or without a trailing separator.
func TestFromDirPathsShareSources(t *testing.T) {
	dir := fromDirFixture(t, 30)
	if err := os.MkdirAll(filepath.Join(dir, "d00", "deep", "er"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d00", "deep", "er", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{dir, dir + string(filepath.Separator)} {
		tr, err := FromDir(root)
		if err != nil {
			t.Fatal(err)
		}
		files := 0
		for e := range tr.All() {
			if e.Kind != File {
				continue
			}
			files++
			if filepath.Clean(e.Source) != filepath.Join(dir, filepath.FromSlash(e.Path)) {
				t.Errorf("%s: source %s, want it under %s", e.Path, e.Source, dir)
			}
			if filepath.Separator == '/' && unsafe.StringData(e.Path) != unsafe.StringData(e.Source[len(e.Source)-len(e.Path):]) {
				t.Errorf("%s: a string of its own, not the end of %s", e.Path, e.Source)
			}
		}
		if files != 31 {
			t.Errorf("root %s: %d files, want 31", root, files)
		}
	}
}

// The walk's order is the one sorting gives, names that sort apart from
// their paths included ("a" < "a-b" < "a.c", but "a/x" before "a-b"); a
// file's stamp is the one StampOf gives for an lstat of it.
func TestFromDirOrderAndStamps(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/x", "a/y/z", "a-b", "a.c", "a!", "b/a/c", "B", "_/1"} {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a/x", filepath.Join(dir, "a-link")); err != nil {
		t.Fatal(err)
	}
	tr, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	added := New()
	for e := range tr.All() {
		if err := added.Add(e); err != nil {
			t.Fatal(err)
		}
		if e.Kind != File {
			continue
		}
		info, err := os.Lstat(e.Source)
		if err != nil {
			t.Fatal(err)
		}
		if e.Stamp != StampOf(info) || e.Size != info.Size() || e.Mode != NormalMode(info.Mode()) {
			t.Errorf("%s: stamp %+v, size %d, mode %v; lstat gives %+v, %d, %v", e.Path, e.Stamp, e.Size, e.Mode, StampOf(info), info.Size(), NormalMode(info.Mode()))
		}
	}
	if got, want := paths(tr.Entries()), paths(added.Entries()); !slices.Equal(got, want) {
		t.Errorf("walk order %v\nsorted      %v", got, want)
	}
	if !maps.Equal(tr.parents, added.parents) {
		t.Errorf("parents %v, want %v", tr.parents, added.parents)
	}
}

// ReadDirStats gives what Lstat gives of each entry, sorted by name,
// however many reads of the directory listing it takes.
func TestReadDirStats(t *testing.T) {
	dir := t.TempDir()
	want := []string{"a", "b", "c", "d", "l"}
	for _, name := range []string{"b", "a", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if mkfifo(filepath.Join(dir, "p")) == nil {
		want = append(want, "p")
	}
	// Long names, more than one read of the listing holds.
	for i := range 600 {
		name := fmt.Sprintf("z%03d%s", i, strings.Repeat("n", 200))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	stats, err := ReadDirStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range stats {
		names = append(names, st.Name)
		want, err := Lstat(filepath.Join(dir, st.Name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Stamp != want.Stamp || st.Mode.Type() != want.Mode.Type() || st.Mode.Perm() != want.Mode.Perm() {
			t.Errorf("%s: %+v, Lstat gives %+v", st.Name, st, want)
		}
	}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v,\nwant %v", names, want)
	}
	if _, err := ReadDirStats(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	if _, err := ReadDirStats(filepath.Join(dir, "a")); err == nil {
		t.Error("a file listed as a directory")
	}
}

// A pipe in a directory is refused by name and type: it has no content
// to hash or place.
func TestFromDirRefusesPipe(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "fifo")
	if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if mkfifo(p) != nil {
		t.Skip("no named pipes here")
	}
	_, err := FromDir(dir)
	if err == nil || !strings.Contains(err.Error(), "sub/fifo is a named pipe: only files, directories and symlinks can be placed") {
		t.Errorf("FromDir: %v", err)
	}
}

// Marking the directories an archive implied, and the headers it gave,
// walks a tree read from disk without indexing every path (a map of each
// path was 12 MB for 200,000 files); a tree without hard links is not
// indexed for them either.
func TestMarkingDoesNotIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"a/x", "a/b/y", "c/z"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr.Imply(func(p string) bool { return p == "a/b" || p == "c/z" })
	tr.Archive(func(p string) (DirMeta, bool) { return DirMeta{Mode: 0o700, UID: 7}, p == "a/x" })
	if err := tr.Link(nil); err != nil {
		t.Fatal(err)
	}
	if len(tr.entries) != 0 || len(tr.unindexed) != tr.Len() {
		t.Errorf("%d paths indexed, %d not: marking indexed the tree", len(tr.entries), len(tr.unindexed))
	}
	for e := range tr.All() {
		if want := e.Path == "a/b"; e.Implied != want {
			t.Errorf("%s: implied %v, want %v (only directories are)", e.Path, e.Implied, want)
		}
		if want := e.Path == "a/x"; (e.Archived != nil) != want || want && *e.Archived != (DirMeta{Mode: 0o700, UID: 7}) {
			t.Errorf("%s: archived %+v", e.Path, e.Archived)
		}
	}
	// Indexed (a lookup), the marks are the same.
	if e, ok := tr.Get("a/b"); !ok || !e.Implied {
		t.Errorf("a/b once indexed: %+v, %v", e, ok)
	}
}

// A path the user writes with a backslash names the entry whose name
// holds it, where the artifact has one (path:
// lib/systemd/system/system-systemd\x2dcryptsetup.slice), and otherwise
// takes it as a separator (bin\x.exe).
func TestSubtreeBackslashLiteralFirst(t *testing.T) {
	entries := []Entry{
		{Path: "lib", Kind: Dir}, {Path: `lib/a\x2db.slice`, Kind: File},
		{Path: "bin", Kind: Dir}, {Path: "bin/x.exe", Kind: File},
	}
	for from, want := range map[string]string{
		`lib/a\x2db.slice`: `a\x2db.slice`,
		`bin\x.exe`:        "x.exe",
	} {
		out, one, err := subtree(entries, from)
		if err != nil || !one || len(out) != 1 || out[0].Path != want {
			t.Errorf("subtree(%s) = %v, %v, %v; want the file %s", from, out, one, err, want)
		}
	}
	if _, _, err := subtree(entries, `lib\a`); !errors.Is(err, ErrNoPath) {
		t.Errorf(`subtree(lib\a): %v, want ErrNoPath`, err)
	}
}

// Where the artifact holds both the name with the backslash and the path
// it separates (a\b and a/b), which one a path a\b means cannot be told:
// an error naming both, where the name with the backslash was taken.
// Written with a slash, it is the separated one.
func TestSubtreeBackslashBothRefused(t *testing.T) {
	for _, entries := range [][]Entry{
		{{Path: `a\b`, Kind: File}, {Path: "a", Kind: Dir}, {Path: "a/b", Kind: File}},
		{{Path: `a\b`, Kind: Dir}, {Path: `a\b/x`, Kind: File}, {Path: "a", Kind: Dir}, {Path: "a/b", Kind: Dir}, {Path: "a/b/y", Kind: File}},
	} {
		_, _, err := subtree(entries, `a\b`)
		if !errors.Is(err, ErrAmbiguousPath) || !strings.Contains(err.Error(), `the artifact has both a\b, a name holding a backslash, and a/b`) {
			t.Errorf("subtree(a\\b) of %v: %v, want both named", entries, err)
		}
		out, _, err := subtree(entries, "a/b")
		if err != nil || len(out) != 1 || strings.Contains(out[0].Path, "x") {
			t.Errorf("subtree(a/b) of %v: %v, %v; want a/b's", entries, out, err)
		}
	}
	// An empty directory a\b is nothing a path takes: a/b is meant.
	entries := []Entry{{Path: `a\b`, Kind: Dir}, {Path: "a", Kind: Dir}, {Path: "a/b", Kind: File}}
	if out, one, err := subtree(entries, `a\b`); err != nil || !one || out[0].Path != "b" {
		t.Errorf("subtree(a\\b) beside an empty directory a\\b: %v, %v, %v; want the file a/b", out, one, err)
	}
}

// UserPath takes a backslash as a character of a name where the artifact
// holds that name, else as a separator; both held is an error.
func TestUserPath(t *testing.T) {
	for _, tc := range []struct {
		from string
		has  []string
		want string
		err  error
	}{
		{`a\b`, []string{`a\b`}, `a\b`, nil},
		{`a\b`, []string{"a/b"}, "a/b", nil},
		{`a\b`, nil, "a/b", nil},
		{`a\b`, []string{`a\b`, "a/b"}, "", ErrAmbiguousPath},
		{`./a\b`, []string{`a\b`}, `a\b`, nil},
		{"a/b", []string{`a\b`, "a/b"}, "a/b", nil},
		{`a\..\..\b`, []string{"b"}, "", nil},
	} {
		got, err := UserPath(tc.from, func(name string) bool { return slices.Contains(tc.has, name) })
		if got != tc.want || tc.err != nil && !errors.Is(err, tc.err) || tc.want == "" && err == nil || tc.want != "" && err != nil {
			t.Errorf("UserPath(%s) with %q = %q, %v; want %q, %v", tc.from, tc.has, got, err, tc.want, tc.err)
		}
	}
}
