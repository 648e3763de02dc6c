package uptodate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func take(t *testing.T, jobs int, paths ...string) Snapshot {
	t.Helper()
	s, err := Take(paths, jobs, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The digest is the same however many goroutines read the tree, and
// changes with any change a build could see.
func TestTake(t *testing.T) {
	dir := t.TempDir()
	for i := range 30 {
		write(t, filepath.Join(dir, "src", fmt.Sprintf("d%02d", i%7), fmt.Sprintf("sub%d", i%3), fmt.Sprintf("f%02d", i)), "x")
	}
	file := filepath.Join(dir, "file")
	write(t, file, "file")
	if err := os.Symlink("file", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	paths := []string{src, file, filepath.Join(dir, "link")}
	base := take(t, 1, paths...)
	// src and its 7 directories, 21 subdirectories and 30 files; file;
	// the link and what it points at.
	if base.Entries != 1+7+21+30+1+2 {
		t.Fatalf("%d entries stamped, want 62", base.Entries)
	}
	for _, jobs := range []int{2, 4, 64} {
		if s := take(t, jobs, paths...); s.Digest != base.Digest {
			t.Fatalf("jobs %d: digest %s, want %s", jobs, s.Digest, base.Digest)
		}
	}
	if s := take(t, 1, file, src, filepath.Join(dir, "link")); s.Digest == base.Digest {
		t.Fatal("the order of the paths does not count")
	}

	f := filepath.Join(src, "d03", "sub1", "f10")
	changes := []struct {
		name string
		do   func() error
	}{
		{"rewritten, same size, times put back", func() error {
			info, err := os.Stat(f)
			if err != nil {
				return err
			}
			if err := os.WriteFile(f, []byte("y"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(f, info.ModTime(), info.ModTime())
		}},
		{"mode", func() error { return os.Chmod(f, 0o755) }},
		{"added", func() error { return os.WriteFile(filepath.Join(src, "d00", "new"), nil, 0o644) }},
		{"removed", func() error { return os.Remove(filepath.Join(src, "d00", "new")) }},
		{"renamed", func() error { return os.Rename(f, f+".old") }},
		{"link retargeted", func() error {
			write(t, filepath.Join(dir, "other"), "file")
			l := filepath.Join(dir, "link")
			if err := os.Remove(l); err != nil {
				return err
			}
			return os.Symlink("other", l)
		}},
		{"what the link points at rewritten", func() error { return os.WriteFile(filepath.Join(dir, "other"), []byte("elif"), 0o644) }},
	}
	prev := base.Digest
	for _, c := range changes {
		// Timestamps of some file systems tick coarsely.
		time.Sleep(20 * time.Millisecond)
		if err := c.do(); err != nil {
			t.Fatal(c.name, err)
		}
		s := take(t, 2, paths...)
		if s.Digest == prev {
			t.Errorf("%s: the digest did not change", c.name)
		}
		prev = s.Digest
	}

	if _, err := Take([]string{filepath.Join(dir, "missing")}, 1, time.Time{}); err == nil {
		t.Error("a missing path was stamped")
	}
}

// A path changed within Settle of the snapshot is named: its stamp could
// survive another change.
func TestTakeUnsettled(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a", "b"), "x")
	s, err := Take([]string{dir}, 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.Unsettled == "" {
		t.Fatal("a file written now was taken as settled")
	}
	s, err = Take([]string{dir}, 1, time.Now().Add(Settle+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s.Unsettled != "" {
		t.Fatalf("%s: unsettled %s after it", s.Unsettled, Settle)
	}
}

func TestStore(t *testing.T) {
	st := Store{Dir: filepath.Join(t.TempDir(), "notes")}
	key := Key([]byte("a"), []byte("b"))
	if key == Key([]byte("ab")) || key == Key([]byte("a"), []byte("b"), nil) {
		t.Fatal("keys of different parts collide")
	}
	if st.Get(key) != nil {
		t.Fatal("a note before any was written")
	}
	n := &Note{Inputs: "i", Outputs: "o", Result: []byte(`{"x":1}`), Warnings: []string{"w"}}
	if err := st.Put(key, n); err != nil {
		t.Fatal(err)
	}
	got := st.Get(key)
	if got == nil || got.Inputs != "i" || got.Outputs != "o" || string(got.Result) != `{"x":1}` || len(got.Warnings) != 1 {
		t.Fatalf("read back %+v", got)
	}
	// A torn or foreign note is no note.
	if err := os.WriteFile(filepath.Join(st.Dir, key+".json"), []byte(`{"inputs":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if st.Get(key) != nil {
		t.Fatal("a torn note was read")
	}
	// A note whose parts were changed, still JSON, is no note either: it
	// would print a result the outputs do not hold. Nor is a note moved
	// under another key.
	if err := st.Put(key, n); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(filepath.Join(st.Dir, key+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, damage := range [][2]string{{`{"x":1}`, `{"x":2}`}, {`"w"`, `"v"`}, {`"i"`, `"j"`}, {`"o"`, `"p"`}} {
		damaged := strings.Replace(string(whole), damage[0], damage[1], 1)
		if damaged == string(whole) {
			t.Fatalf("%s is not in the note %s", damage[0], whole)
		}
		write(t, filepath.Join(st.Dir, key+".json"), damaged)
		if got := st.Get(key); got != nil {
			t.Errorf("a note with %s for %s was read: %+v", damage[1], damage[0], got)
		}
	}
	other := Key([]byte("c"))
	write(t, filepath.Join(st.Dir, other+".json"), string(whole))
	if st.Get(other) != nil {
		t.Error("a note was read under another key")
	}
	if err := os.Remove(filepath.Join(st.Dir, other+".json")); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(key, n); err != nil {
		t.Fatal(err)
	}
	// Pruning removes old notes only, and nothing that is not a note.
	foreign := filepath.Join(st.Dir, "README")
	write(t, foreign, "mine")
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(foreign, old, old); err != nil {
		t.Fatal(err)
	}
	if err := st.Prune(24*time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	if st.Get(key) == nil {
		t.Fatal("a fresh note was pruned")
	}
	// A note answered from is used, not old.
	st.Touch(key, time.Now().Add(2*time.Hour))
	if err := st.Prune(time.Hour, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st.Get(key) == nil {
		t.Fatal("a note in use was pruned")
	}
	if err := st.Prune(time.Hour, time.Now().Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st.Get(key) != nil {
		t.Fatal("an old note was kept")
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatal("a file that is not a note was removed")
	}
}

// The digest is the one a plain walk (os.ReadDir, os.Lstat, one hash per
// directory) gives: listing and stat'ing without allocating per file
// leaves out nothing, and a note written before still matches.
func TestTakeAsPlainWalk(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		write(t, filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("e%d", i%7), fmt.Sprintf("f%03d", i)), "x")
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "d0", "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "d1", "e1"), 0o700); err != nil {
		t.Fatal(err)
	}
	var walk func(dir string) [32]byte
	walk = func(dir string) [32]byte {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			st, err := tree.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			writeString(h, e.Name())
			plainStamp(h, st.Mode.Type()|st.Mode.Perm(), st.Stamp)
			if e.IsDir() {
				sum := walk(p)
				h.Write(sum[:])
			}
		}
		var sum [32]byte
		h.Sum(sum[:0])
		return sum
	}
	st, err := tree.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	plainStamp(h, st.Mode, st.Stamp) // a root's mode whole, as Lstat gives it
	sub := walk(dir)
	h.Write(sub[:])
	root := h.Sum(nil)
	h = sha256.New()
	writeString(h, dir)
	h.Write(root)
	want := hex.EncodeToString(h.Sum(nil))
	for _, jobs := range []int{1, 2} {
		if s := take(t, jobs, dir); s.Digest != want {
			t.Errorf("jobs %d: digest %s, a plain walk gives %s", jobs, s.Digest, want)
		}
	}
}

func plainStamp(h hash.Hash, mode fs.FileMode, s tree.Stamp) {
	for _, v := range []uint64{uint64(mode), uint64(s.Size), uint64(s.ModTime), uint64(s.CTime), s.Ino, s.Dev} {
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
}

// Touch changes only a note's own file: at a link planted under a note's
// name, Chtimes set the times of the file it named, wherever it was.
func TestTouchFollowsNoLink(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	target := filepath.Join(t.TempDir(), "not-a-note")
	write(t, target, "mine")
	old := time.Unix(1e9, 0)
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(st.Dir, "k.json")); err != nil {
		t.Fatal(err)
	}
	st.Touch("k", time.Now())
	info, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if !info.ModTime().Equal(old) {
		t.Errorf("Touch through a link changed %s's time to %s", target, info.ModTime())
	}
}
