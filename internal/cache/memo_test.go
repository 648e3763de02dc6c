package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/pallet-dev/pallet/internal/tree"
)

// Over its limit, the memo keeps what this build used and, of the rest,
// what was used most recently.
func TestMemoIsCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	var files []string
	for _, n := range []string{"f1", "f2", "f3", "f4", "f5", "f6"} {
		p := filepath.Join(dir, n)
		writeFile(t, p, []byte(n))
		files = append(files, p)
	}
	settle()
	// One shard, so that the limit is the shard's.
	c, _ := openCache(t, cacheDir)
	c.memoShards = 1
	for _, p := range files[:5] {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	// f1 and f2 were last used long ago.
	c.mu.Lock()
	for i, p := range files[:2] {
		m := c.shard(p).entries[p]
		m.seen, m.used = today()-20+int32(i), false
	}
	c.mu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if saved := readMemo(t, cacheDir); len(saved) != 5 {
		t.Fatalf("the memo holds %d entries, want 5", len(saved))
	}

	c, _ = openCache(t, cacheDir)
	c.memoShards = 1
	c.MemoLimit = 4
	for _, p := range files[4:] {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	saved := readMemo(t, cacheDir)
	var kept []string
	for _, p := range files {
		if _, ok := saved[p]; ok {
			kept = append(kept, filepath.Base(p))
		}
	}
	if got := strings.Join(kept, " "); got != "f3 f4 f5 f6" || len(saved) != 4 {
		t.Errorf("the memo kept %q (%d entries), want f3 f4 f5 f6", got, len(saved))
	}
}

// An entry no build used for memoMaxAge days is dropped when its shard
// is next written, even if its file is still there.
func TestMemoForgetsUnusedEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	stale, fresh := filepath.Join(dir, "stale"), filepath.Join(dir, "fresh")
	writeFile(t, stale, []byte("stale"))
	writeFile(t, fresh, []byte("fresh"))
	settle()
	c, _ := openCache(t, cacheDir)
	c.memoShards = 1
	for _, p := range []string{stale, fresh} {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	m := c.shard(stale).entries[stale]
	m.seen, m.used = today()-memoMaxAge-1, false
	c.shard(stale).dirty = true
	c.mu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	saved := readMemo(t, cacheDir)
	if _, ok := saved[stale]; ok {
		t.Error("an entry unused for longer than memoMaxAge days was kept")
	}
	if _, ok := saved[fresh]; !ok {
		t.Error("the entry used today was dropped")
	}
}

// A build reads only the shards of the files it looks up: after a build
// that remembered many files, a build of a few reads a bounded part of
// the memo.
func TestSmallBuildReadsFewShards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	c, _ := openCache(t, cacheDir)
	const many = 4000
	var files []string
	for i := range many {
		p := filepath.Join(dir, "big", fmt.Sprintf("f%04d", i))
		writeFile(t, p, []byte(p))
		if err := c.Learn(p, sha([]byte(p))); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	shards, _ := os.ReadDir(filepath.Join(cacheDir, "memo"))
	if len(shards) != memoShards {
		t.Fatalf("%d files made %d shards, want %d", many, len(shards), memoShards)
	}

	c, _ = openCache(t, cacheDir)
	defer c.Close()
	for _, p := range files[:3] {
		if got, err := c.FileSHA256(p); err != nil || got != sha([]byte(p)) {
			t.Fatalf("%s: %s %v", p, got, err)
		}
	}
	c.mu.Lock()
	read, entries := len(c.shards), 0
	for _, s := range c.shards {
		entries += len(s.at) + len(s.entries)
	}
	c.mu.Unlock()
	// 4000 entries in 256 shards: about 16 in each of the (at most) 3
	// shards read, never anywhere near all of them.
	if read > 3 || entries > 3*many/memoShards*3 {
		t.Errorf("looking up 3 files read %d shards, %d entries (of %d)", read, entries, many)
	}
}

// rememberedFiles makes n files under dir and a memo in cacheDir that
// holds the digest of each, of a cache with shards shards (0: memoShards),
// and gives the files and their digests.
func rememberedFiles(t *testing.T, dir, cacheDir string, n, shards int) ([]string, map[string]string) {
	t.Helper()
	c, _ := openCache(t, cacheDir)
	c.memoShards = shards
	var files []string
	want := map[string]string{}
	for i := range n {
		p := filepath.Join(dir, "src", fmt.Sprintf("f%d", i))
		writeFile(t, p, []byte(p))
		if err := c.Learn(p, sha([]byte(p))); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		want[p] = sha([]byte(p))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return files, want
}

// Two lookups of files in two shards read the shards' files at once: the
// digest workers of a no-op build were each held up by the others' reads,
// the shards read one after another under the cache's lock. Not parallel:
// it sets shardHook.
func TestShardsAreReadConcurrently(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	files, want := rememberedFiles(t, dir, cacheDir, 40, 0)
	c, _ := openCache(t, cacheDir)
	defer c.Close()
	a := files[0]
	b := files[slices.IndexFunc(files, func(p string) bool { return c.shardOf(p) != c.shardOf(a) })]
	readingA, readingB := make(chan struct{}), make(chan struct{})
	var onceA, onceB sync.Once
	shardHook = func(i int, reading bool) {
		switch {
		case !reading:
		case i == c.shardOf(a):
			onceA.Do(func() { close(readingA) })
			// The read of a's shard goes on only once b's has started,
			// which it cannot if the first holds the lock.
			select {
			case <-readingB:
			case <-time.After(10 * time.Second):
				t.Error("the second shard was not read while the first was being read")
			}
		case i == c.shardOf(b):
			onceB.Do(func() { close(readingB) })
		}
	}
	defer func() { shardHook = nil }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if got, err := c.FileSHA256(a); err != nil || got != want[a] {
			t.Errorf("%s: %s (%v), want %s", a, got, err, want[a])
		}
	}()
	<-readingA
	if got, err := c.FileSHA256(b); err != nil || got != want[b] {
		t.Errorf("%s: %s (%v), want %s", b, got, err, want[b])
	}
	<-done
}

// Lookups of one shard at once read its file once: the first reads it,
// the others wait for that read. Not parallel: it sets shardHook.
func TestShardIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	const lookups = 8
	files, want := rememberedFiles(t, dir, cacheDir, lookups, 1)
	c, _ := openCache(t, cacheDir)
	defer c.Close()
	c.memoShards = 1
	var reads atomic.Int32
	waiting := make(chan struct{}, lookups)
	shardHook = func(i int, reading bool) {
		if !reading {
			waiting <- struct{}{}
			return
		}
		if reads.Add(1) > 1 {
			return
		}
		// The first read ends once every other lookup waits for it.
		for range lookups - 1 {
			select {
			case <-waiting:
			case <-time.After(10 * time.Second):
				t.Error("the other lookups did not wait for the shard being read")
				return
			}
		}
	}
	defer func() { shardHook = nil }()
	var wg sync.WaitGroup
	for _, p := range files {
		wg.Go(func() {
			if got, err := c.FileSHA256(p); err != nil || got != want[p] {
				t.Errorf("%s: %s (%v), want %s", p, got, err, want[p])
			}
		})
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("the shard was read %d times by %d lookups at once, want once", n, lookups)
	}
}

// A shard too big to read is ignored, not read into memory, and
// rewritten within bounds; a damaged one is ignored and rewritten.
func TestOversizedOrDamagedShardIsIgnored(t *testing.T) {
	defer func(n int64) { maxShardBytes = n }(maxShardBytes)
	maxShardBytes = 1 << 10
	for _, tc := range []string{"oversized", "damaged"} {
		dir := t.TempDir()
		cacheDir := filepath.Join(dir, "cache")
		p := filepath.Join(dir, "input")
		writeFile(t, p, []byte("content"))
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		// A shard whose one real entry would be used if it were read.
		entries := map[string]*memoEntry{p: {st: tree.StampOf(info), seen: today(), facts: encodeFacts(fact{"sha256", sha([]byte("bogus"))})}}
		if tc == "oversized" {
			for i := range 20 {
				// Names that differ from their first letter: a shard
				// holds only what a path does not share with the one
				// before.
				entries[filepath.Join(dir, "gone", strings.Repeat(string(rune('a'+i)), 41))] = &memoEntry{facts: encodeFacts(fact{"sha256", "0"})}
			}
		}
		data := encodeShard(entries)
		if tc == "oversized" && int64(len(data)) <= maxShardBytes {
			t.Fatalf("the shard is only %d bytes", len(data))
		}
		if tc == "damaged" {
			data = data[:len(data)-3]
		}
		c, _ := openCache(t, cacheDir)
		writeFile(t, c.shardPath(c.shardOf(p)), data)
		if got, err := c.FileSHA256(p); err != nil || got != sha([]byte("content")) {
			t.Errorf("%s: digest %s (%v): the shard was used", tc, got, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		info, err = os.Stat(c.shardPath(c.shardOf(p)))
		if err != nil || info.Size() > maxShardBytes {
			t.Errorf("%s: the shard was not rewritten within bounds: %v %v", tc, info.Size(), err)
		}
		if _, err := decodeShard(mustRead(t, c.shardPath(c.shardOf(p)))); err != nil {
			t.Errorf("%s: the shard rewritten does not read back: %v", tc, err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// VerifiedBlob serves a whole blob and drops a damaged one.
func TestVerifiedBlob(t *testing.T) {
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	data := []byte("blob content")
	sum := sha(data)
	tmp, _, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tmp, "b"), data)
	if _, err := c.PutBlob(sum, filepath.Join(tmp, "b")); err != nil {
		t.Fatal(err)
	}
	if p, ok := c.VerifiedBlob(sum); !ok || p != c.Blob(sum) {
		t.Fatalf("the whole blob was not served: %s %v", p, ok)
	}
	if _, ok := c.VerifiedBlob(sha([]byte("absent"))); ok {
		t.Error("an absent blob was served")
	}
	if _, ok := c.VerifiedBlob("../../etc/passwd"); ok {
		t.Error("a name that is no digest was served")
	}
	rewriteInPlace(t, c.Blob(sum), 0, []byte("B"))
	if _, ok := c.VerifiedBlob(sum); ok {
		t.Error("the damaged blob was served")
	}
	if _, err := os.Stat(c.Blob(sum)); err == nil {
		t.Error("the damaged blob was not dropped")
	}
	if !strings.Contains(log.String(), "sha256:"+sum+" is damaged") {
		t.Errorf("the damage was not reported; log:\n%s", log)
	}
}

// A file pallet wrote is remembered at once, with the digest it was
// written with, without waiting for it to settle and without reading it
// (the digest given here is not its content's, and is what comes back),
// by this build and the next, until the file changes.
func TestLearnRemembersWrittenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	p := filepath.Join(dir, "tmp", "written")
	writeFile(t, p, []byte("fresh"))
	claimed := sha([]byte("what pallet wrote"))
	c, _ := openCache(t, cacheDir)
	if err := c.Learn(p, claimed); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FileSHA256(p); err != nil || got != claimed {
		t.Errorf("digest %s (%v), want the learned one", got, err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Checked(p, info); !ok || got != claimed {
		t.Errorf("Checked gave %s, %v; want the learned digest", got, ok)
	}
	// Its directory renamed (as a cache entry is committed): the same
	// file, known by its stamp under its new name. (Renaming the file
	// itself would set its ctime.)
	moved := filepath.Join(dir, "entry", "written")
	if err := os.Rename(filepath.Dir(p), filepath.Dir(moved)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FileSHA256(moved); err != nil || got != claimed {
		t.Errorf("after a rename: digest %s (%v), want the learned one", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c, _ = openCache(t, cacheDir)
	defer c.Close()
	if got, err := c.FileSHA256(moved); err != nil || got != claimed {
		t.Errorf("next build: digest %s (%v), want the learned one", got, err)
	}
	if info, err := os.Stat(moved); err != nil {
		t.Fatal(err)
	} else if _, ok := c.Checked(moved, info); ok {
		t.Error("the next build takes a digest only the memo gave as one it computed")
	}
	time.Sleep(20 * time.Millisecond) // past the change time's granularity
	rewriteInPlace(t, moved, 0, []byte("F"))
	if got, err := c.FileSHA256(moved); err != nil || got != sha([]byte("Fresh")) {
		t.Errorf("after a change: digest %s (%v), want the content's", got, err)
	}
}

// A file found on disk is remembered, and counted as hashed by this
// build, only once it has settled: one changed again within the
// timestamps' granularity could keep its stamp.
func TestOnlySettledFilesCountAsChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "input")
	writeFile(t, p, []byte("young"))
	c, _ := openCache(t, filepath.Join(dir, "cache"))
	defer c.Close()
	if _, err := c.FileSHA256(p); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Checked(p, info); ok {
		t.Error("a file read before it settled counts as checked")
	}
	settle()
	if _, err := c.FileSHA256(p); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Checked(p, info); !ok || got != sha([]byte("young")) {
		t.Errorf("a settled file read whole: Checked gave %s, %v", got, ok)
	}
}

// Wrote makes a file known to this build by its stamp, under any name,
// and leaves the memo no entry under a name that will be gone.
// A path written and then replaced by a symlink to another file (as a
// hostile archive may do) gives that file none of its digest.
func TestWroteIgnoresLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, _ := openCache(t, filepath.Join(dir, "cache"))
	g := filepath.Join(dir, "tmp", "g")
	writeFile(t, g, []byte("Y"))
	if err := c.Wrote(g, sha([]byte("Y"))); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "tmp", "f")
	if err := os.Symlink("g", f); err != nil {
		t.Fatal(err)
	}
	if err := c.Wrote(f, sha([]byte("X"))); err != nil {
		t.Fatal(err)
	}
	if err := c.Learn(f, sha([]byte("X"))); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FileSHA256(g); err != nil || got != sha([]byte("Y")) {
		t.Errorf("g: %s (%v), want the digest of its own content", got, err)
	}
}

// A digest learned by a file's identity is kept as bytes: it comes back
// as it was given, only while the file keeps its stamp, and what is not a
// sha256 in hex is not learned (reading the file again is all it costs).
func TestLearnedDigestAsGiven(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, _ := openCache(t, filepath.Join(dir, "cache"))
	p := filepath.Join(dir, "tmp", "f")
	writeFile(t, p, []byte("data"))
	st := stampOf(t, p)
	for _, bad := range []string{"", "abc", strings.ToUpper(sha([]byte("data"))), sha([]byte("data")) + "00", "sha256:" + sha([]byte("data"))[7:]} {
		if err := c.Wrote(p, bad); err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Learned(st); ok {
			t.Errorf("Wrote(%q): learned %q", bad, got)
		}
	}
	want := sha([]byte("data"))
	if err := c.Wrote(p, want); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Learned(st); !ok || got != want {
		t.Errorf("learned %q, %v; want %q", got, ok, want)
	}
	for _, other := range []tree.Stamp{
		{Size: st.Size + 1, ModTime: st.ModTime, CTime: st.CTime, Ino: st.Ino, Dev: st.Dev},
		{Size: st.Size, ModTime: st.ModTime + 1, CTime: st.CTime, Ino: st.Ino, Dev: st.Dev},
		{Size: st.Size, ModTime: st.ModTime, CTime: st.CTime + 1, Ino: st.Ino, Dev: st.Dev},
		{Size: st.Size, ModTime: st.ModTime, CTime: st.CTime, Ino: st.Ino + 1, Dev: st.Dev},
		{Size: st.Size, ModTime: st.ModTime, CTime: st.CTime, Ino: st.Ino, Dev: st.Dev + 1},
	} {
		if got, ok := c.Learned(other); ok {
			t.Errorf("stamp %+v (learned as %+v): %q", other, st, got)
		}
	}
}

func stampOf(t *testing.T, p string) tree.Stamp {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return tree.StampOf(info)
}

func TestWroteLeavesNoEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	p := filepath.Join(dir, "tmp", "f")
	writeFile(t, p, []byte("data"))
	c, _ := openCache(t, cacheDir)
	claimed := sha([]byte("as written"))
	if err := c.Wrote(p, claimed); err != nil {
		t.Fatal(err)
	}
	if memoHas(c, p) {
		t.Error("the temporary name has a memo entry")
	}
	final := filepath.Join(dir, "entry", "f")
	if err := os.Rename(filepath.Dir(p), filepath.Dir(final)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FileSHA256(final); err != nil || got != claimed {
		t.Errorf("under its final name: %s (%v), want the digest it was written with", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	saved := readMemo(t, cacheDir)
	if _, ok := saved[p]; ok || len(saved) != 1 {
		t.Errorf("the memo saved %d entries, the temporary name among them: %v", len(saved), ok)
	}
}

// Flush saves what the build changed and lets go of the shards read; a
// later lookup reads its shard again, and what the build learned stays.
func TestFlushLetsGoOfShards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	p := filepath.Join(dir, "f")
	writeFile(t, p, []byte("data"))
	claimed := sha([]byte("as written"))
	c, _ := openCache(t, cacheDir)
	defer c.Close()
	if err := c.Learn(p, claimed); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	held := len(c.shards)
	c.mu.Unlock()
	if held != 0 {
		t.Errorf("%d shards held after Flush", held)
	}
	if _, ok := readMemo(t, cacheDir)[p]; !ok {
		t.Error("Flush did not save the memo")
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Checked(p, info); !ok || got != claimed {
		t.Errorf("after Flush, Checked gave %s, %v", got, ok)
	}
	if got, err := c.FileSHA256(p); err != nil || got != claimed {
		t.Errorf("after Flush: %s (%v), want the learned digest", got, err)
	}
}

// An entry's facts are kept encoded as a shard holds them: reading,
// setting and replacing facts, and a shard written and read back, give
// the same facts, and an entry read from a shard is a slice of it.
func TestMemoFactsEncoded(t *testing.T) {
	t.Parallel()
	m := &memoEntry{st: tree.Stamp{Size: 3, Ino: 7}, seen: today()}
	if _, ok := m.get("sha256"); ok {
		t.Fatal("an entry without facts has a sha256")
	}
	m.set("sha256", strings.Repeat("a", 64))
	m.set("go-buildinfo", "")
	m.set("sha256", strings.Repeat("b", 64)) // replaced, not added
	want := map[string]string{"sha256": strings.Repeat("b", 64), "go-buildinfo": ""}
	check := func(what string, m *memoEntry) {
		t.Helper()
		for name, v := range want {
			if got, ok := m.get(name); !ok || got != v {
				t.Errorf("%s: %s = %q, %v; want %q", what, name, got, ok, v)
			}
		}
		if facts, n, ok := decodeFacts(nil, m.facts); !ok || n != len(m.facts) || len(facts) != len(want) {
			t.Errorf("%s: %d facts in %d of %d bytes (ok %v), want %d in all", what, len(facts), n, len(m.facts), ok, len(want))
		}
	}
	check("set", m)

	// A fact added to an entry that has some leaves their string as it
	// was: a value handed out stays the memo's copy.
	m2 := &memoEntry{st: m.st, seen: today()}
	m2.set("sha256", strings.Repeat("c", 64))
	sum, _ := m2.get("sha256")
	m2.set("go-buildinfo", "")
	if again, _ := m2.get("sha256"); unsafe.StringData(again) != unsafe.StringData(sum) {
		t.Error("adding a fact copied the others")
	}
	if v, ok := m2.get("go-buildinfo"); !ok || v != "" {
		t.Errorf("go-buildinfo = %q, %v after adding it", v, ok)
	}
	if facts, _, ok := decodeFacts(nil, m2.encoded()); !ok || len(facts) != 2 {
		t.Errorf("the entry encodes %v (ok %v), want both facts", facts, ok)
	}

	data := encodeShard(map[string]*memoEntry{"/x/a": m, "/x/b": {st: tree.Stamp{Size: 1}, seen: today(), facts: encodeFacts(fact{"exe-ok linux/amd64", "ok"})}})
	got, err := decodeShard(data)
	if err != nil {
		t.Fatal(err)
	}
	check("read back", got["/x/a"])
	if got["/x/a"].st != m.st || got["/x/a"].seen != m.seen {
		t.Errorf("read back: stamp %+v day %d, want %+v day %d", got["/x/a"].st, got["/x/a"].seen, m.st, m.seen)
	}
	if v, ok := got["/x/b"].get("exe-ok linux/amd64"); !ok || v != "ok" {
		t.Errorf("read back: /x/b exe-ok = %q, %v", v, ok)
	}
	if !bytes.Contains(data, []byte(got["/x/a"].facts)) {
		t.Error("the facts read are not the shard's bytes")
	}
	// Cut anywhere inside the facts, a shard is damaged, not misread.
	for cut := len(data) - 1; cut > len(data)-len(got["/x/b"].facts); cut-- {
		if _, err := decodeShard(data[:cut]); err == nil {
			t.Errorf("a shard cut at %d of %d bytes was read", cut, len(data))
		}
	}
}

// Entries a build only looks up are looked up in the shard as read, not
// copied out of it; a shard whose entries were all used today already is
// not written again, and one with an entry last used another day is,
// with that entry dated today. A shard whose paths are out of order was
// not written by the memo and is not read.
func TestMemoLooksUpInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	if err := claim(cacheDir); err != nil { // the cache is made before its memo is written into
		t.Fatal(err)
	}
	var files []string
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprintf("f%02d", i))
		writeFile(t, p, []byte(p))
		files = append(files, p)
	}
	write := func(seen int32) {
		t.Helper()
		entries := map[string]*memoEntry{}
		for _, p := range files {
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			entries[p] = &memoEntry{st: tree.StampOf(info), seen: seen, facts: encodeFacts(fact{"sha256", sha([]byte(p))})}
		}
		writeFile(t, filepath.Join(cacheDir, "memo", "00"), encodeShard(entries))
	}
	lookUp := func() *memoShard {
		t.Helper()
		c, _ := openCache(t, cacheDir)
		c.memoShards = 1
		for _, p := range files {
			if got, err := c.FileSHA256(p); err != nil || got != sha([]byte(p)) {
				t.Fatalf("%s: %s %v, want the remembered digest", p, got, err)
			}
		}
		c.mu.Lock()
		s := c.shards[0]
		if len(s.entries) != 0 || len(s.at) != len(files) {
			t.Errorf("%d entries copied out of the shard, %d looked up in it; want 0 and %d", len(s.entries), len(s.at), len(files))
		}
		c.mu.Unlock()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	shard := filepath.Join(cacheDir, "memo", "00")
	write(today())
	before, _ := os.Stat(shard)
	if lookUp().dirty {
		t.Error("a shard used as it was is marked for writing")
	}
	if after, _ := os.Stat(shard); !os.SameFile(before, after) {
		t.Error("a shard used as it was was written again")
	}

	write(today() - 3)
	lookUp()
	for p, m := range readMemo(t, cacheDir) {
		if m.seen != today() {
			t.Errorf("%s: last seen on day %d, want today (%d)", p, m.seen, today())
		}
	}

	data := mustRead(t, shard)
	entries, err := decodeShard(data)
	if err != nil {
		t.Fatal(err)
	}
	// The same entries, the first moved last.
	first := encodeShard(map[string]*memoEntry{files[0]: entries[files[0]]})
	rest := bytes.Replace(data, first[len(memoMagic):], nil, 1)
	if _, err := decodeShard(append(rest, first[len(memoMagic):]...)); err == nil {
		t.Error("a shard with its paths out of order was read")
	}
}

// A fact about a young file is derived once per build while the file
// keeps its stamp (asked again, for a layer's key and then the record, it
// is not read again), is not remembered by the next build, and is derived
// again once the stamp changes.
func TestYoungFactsLastOneBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "fresh")
	writeFile(t, p, []byte("just built"))
	c, _ := openCache(t, filepath.Join(dir, "cache"))
	n := 0
	derive := func(path string) (string, error) { n++; return HashFile(path) }
	for range 3 {
		if got, err := c.RememberAt(p, tree.Stamp{}, "sha256", derive); err != nil || got != sha([]byte("just built")) {
			t.Fatalf("RememberAt: %s, %v", got, err)
		}
	}
	if n != 1 {
		t.Errorf("a young file's digest derived %d times in one build, want 1", n)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Checked(p, info); ok {
		t.Error("a young file's digest counts as checked")
	}
	writeFile(t, p, []byte("rebuilt, longer"))
	if got, err := c.RememberAt(p, tree.Stamp{}, "sha256", derive); err != nil || got != sha([]byte("rebuilt, longer")) || n != 2 {
		t.Errorf("after a change: %s, %v, derived %d times; want the new digest, derived again", got, err, n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	next, _ := openCache(t, filepath.Join(dir, "cache"))
	defer next.Close()
	if _, err := next.RememberAt(p, tree.Stamp{}, "sha256", derive); err != nil || n != 3 {
		t.Errorf("the next build derived %d times in all (err %v), want 3: a young fact is not kept", n, err)
	}
}

// SaveNew writes the shards a build made from nothing, while lookups go
// on; a shard changed after is saved again by Flush, and the memo on disk
// is then what Flush alone would have written. A shard read from disk is
// left to Flush.
func TestSaveNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	var files []string
	for i := range 40 {
		p := filepath.Join(dir, "src", fmt.Sprintf("f%d", i))
		writeFile(t, p, []byte(p))
		files = append(files, p)
	}
	// A shard on disk before the build: one file's, by an earlier build.
	c0, _ := openCache(t, cacheDir)
	if err := c0.Learn(files[0], sha([]byte("earlier"))); err != nil {
		t.Fatal(err)
	}
	if err := c0.Close(); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(c0.shardPath(c0.shardOf(files[0])))
	if err != nil {
		t.Fatal(err)
	}

	c, _ := openCache(t, cacheDir)
	defer c.Close()
	for _, p := range files[:30] {
		if err := c.Learn(p, sha([]byte(p))); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { // lookups meanwhile (go test -race)
		defer close(done)
		for _, p := range files[:30] {
			if got, err := c.FileSHA256(p); err != nil || got != sha([]byte(p)) {
				t.Errorf("%s: %s (%v) while saving", p, got, err)
			}
		}
	}()
	c.SaveNew()
	<-done
	saved := readMemo(t, cacheDir)
	for _, p := range files[1:30] {
		if c.shardOf(p) == c.shardOf(files[0]) {
			continue // in the shard read from disk
		}
		if m, ok := saved[p]; !ok {
			t.Errorf("%s: not saved by SaveNew", p)
		} else if v, _ := m.get("sha256"); v != sha([]byte(p)) {
			t.Errorf("%s: saved %s", p, v)
		}
	}
	if now, err := os.ReadFile(c.shardPath(c.shardOf(files[0]))); err != nil || !bytes.Equal(now, old) {
		t.Errorf("SaveNew wrote the shard read from disk (%v)", err)
	}
	// Changed after: saved again, over SaveNew's.
	for _, p := range files {
		if err := c.Learn(p, sha([]byte("again "+p))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	saved = readMemo(t, cacheDir)
	for _, p := range files {
		if v, _ := saved[p].get("sha256"); v != sha([]byte("again "+p)) {
			t.Errorf("%s: %s after Flush", p, v)
		}
	}
}

// A build looking up more files than the memo keeps holds no more
// entries than saving keeps (the last paths of those it used, each
// shard its share: those prune keeps), and still hashes each file once: a digest it derived
// from a settled file stays known, by file identity, for Checked and
// the next lookup. Young files' and other facts are not kept past the
// share.
func TestMemoHoldsItsShareWhileBuilding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	var files []string
	for i := range 40 {
		p := filepath.Join(dir, "src", fmt.Sprintf("f%02d", i))
		writeFile(t, p, []byte(p))
		files = append(files, p)
	}
	settle()
	c, _ := openCache(t, cacheDir)
	c.memoShards = 1
	c.MemoLimit = 8
	derived := map[string]int{}
	derive := func(p string) (string, error) {
		derived[p]++
		return HashFile(p)
	}
	for range 2 {
		for _, p := range files {
			if got, err := c.RememberAt(p, tree.Stamp{}, "sha256", derive); err != nil || got != sha([]byte(p)) {
				t.Fatalf("%s: %s, %v", p, got, err)
			}
			c.mu.Lock()
			n := len(c.shard(p).entries)
			c.mu.Unlock()
			if n > 8+8/4+1 {
				t.Fatalf("after %s: %d entries held, for a limit of 8", p, n)
			}
		}
	}
	for _, p := range files {
		if derived[p] != 1 {
			t.Errorf("%s: hashed %d times", p, derived[p])
		}
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Checked(p, info); !ok || got != sha([]byte(p)) {
			t.Errorf("%s: Checked gave %s, %v", p, got, ok)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	saved := readMemo(t, cacheDir)
	if len(saved) != 8 {
		t.Errorf("saved %d entries, want 8", len(saved))
	}
	for _, p := range files[len(files)-8:] {
		if m, ok := saved[p]; !ok {
			t.Errorf("%s: not saved, of the last paths (saved: %v)", p, slices.Sorted(maps.Keys(saved)))
		} else if v, _ := m.get("sha256"); v != sha([]byte(p)) {
			t.Errorf("%s: saved %q, want it as derived", p, v)
		}
	}
}

// A shard holds most paths as what they share with the one before and
// the rest, every memoRestart-th whole: each path is found, none other
// is, and a shard whose paths do not read back in order, or that an
// earlier version wrote (every path whole), is not used.
func TestShardPathsShared(t *testing.T) {
	t.Parallel()
	entries := map[string]*memoEntry{}
	var paths []string
	for i := range 100 {
		p := fmt.Sprintf("/cache/artifacts/%02x/tree/d%d/f%03d", i%3, i%7, i)
		paths = append(paths, p)
		entries[p] = &memoEntry{st: tree.Stamp{Size: int64(i), ModTime: 1, CTime: 2, Ino: uint64(i) + 10, Dev: 1}, seen: 20000, facts: encodeFacts(fact{"sha256", sha([]byte(p))})}
	}
	data := encodeShard(entries)
	// Without facts, a shard is mostly its paths.
	bare := map[string]*memoEntry{}
	whole := 0
	for _, p := range paths {
		bare[p] = &memoEntry{facts: noFacts}
		whole += len(p)
	}
	if n := len(encodeShard(bare)); n > whole/2 {
		t.Errorf("a shard of paths alone is %d bytes, the paths %d", n, whole)
	}
	got, err := decodeShard(data)
	if err != nil || len(got) != len(entries) {
		t.Fatalf("read back %d entries, %v", len(got), err)
	}
	s := &memoShard{}
	if s.data, s.at, err = indexShard(string(data)); err != nil {
		t.Fatal(err)
	}
	s.used = make([]uint64, (len(s.at)+63)/64)
	for _, p := range paths {
		if m := got[p]; m == nil || m.st != entries[p].st || m.facts != entries[p].facts {
			t.Errorf("%s: read back %+v", p, m)
		}
		if _, m, ok := s.find(p); !ok || m.st != entries[p].st {
			t.Errorf("%s: found %v, %+v", p, ok, m.st)
		}
		for _, other := range []string{p + "x", p[:len(p)-1], p[:len(p)-1] + "~"} {
			if _, ok := entries[other]; ok {
				continue
			}
			if _, _, ok := s.find(other); ok {
				t.Errorf("%s: found", other)
			}
		}
	}
	for _, other := range []string{"", "/", "/a", "/z", "/cache/artifacts/03"} {
		if _, _, ok := s.find(other); ok {
			t.Errorf("%q: found", other)
		}
	}

	// Entries of one path each, to damage: "/a/b" "/a/c" "/a/d".
	enc := func(shared int, suffix string) []byte {
		b := binary.AppendUvarint(nil, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(suffix)))
		b = append(b, suffix...)
		for range 6 {
			b = binary.AppendVarint(b, 1)
		}
		return append(b, encodeFacts(fact{"sha256", sha(nil)})...)
	}
	shard := func(parts ...[]byte) string { return memoMagic + string(bytes.Join(parts, nil)) }
	if _, _, err := indexShard(shard(enc(0, "/a/b"), enc(3, "c"), enc(3, "d"))); err != nil {
		t.Errorf("a shard as written: %v", err)
	}
	for name, bad := range map[string]string{
		"first path not whole":     shard(enc(1, "a/b"), enc(3, "c")),
		"sharing more than before": shard(enc(0, "/a/b"), enc(5, "c")),
		"out of order":             shard(enc(0, "/a/c"), enc(3, "b")),
		"twice":                    shard(enc(0, "/a/b"), enc(3, "b")),
		"earlier version":          "pallet memo 1\n" + string(enc(0, "/a/b"))[1:],
	} {
		if _, _, err := indexShard(bad); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	var restart [][]byte
	for i := range memoRestart + 1 {
		shared := 3
		if i == 0 {
			shared = 0
		}
		restart = append(restart, enc(shared, fmt.Sprintf("/a/%c", 'b'+i)[shared:]))
	}
	if _, _, err := indexShard(shard(restart...)); err == nil {
		t.Errorf("the %d-th path not whole: read", memoRestart)
	}
}

// A file the memo was found wrong about (Forget) is not given the wrong
// digest again later in the build, however many files the build looks up
// after: keeping the shard within its share must not drop what hides the
// entry read from disk.
func TestForgottenStaysForgottenWhileBuilding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	// "a" sorts before the others: the first the shard's share drops.
	p := filepath.Join(dir, "src", "a")
	writeFile(t, p, []byte("content"))
	var files []string
	for i := range 40 {
		f := filepath.Join(dir, "src", fmt.Sprintf("f%02d", i))
		writeFile(t, f, []byte(f))
		files = append(files, f)
	}
	settle()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	bogus := sha([]byte("bogus"))
	c, _ := openCache(t, cacheDir)
	c.memoShards = 1
	c.MemoLimit = 8
	// A damaged memo: p's stamp with another content's digest.
	writeFile(t, c.shardPath(0), encodeShard(map[string]*memoEntry{p: {st: tree.StampOf(info), seen: today(), facts: encodeFacts(fact{"sha256", bogus})}}))
	if got, err := c.FileSHA256(p); err != nil || got != bogus {
		t.Fatalf("the damaged memo gave %s, %v", got, err)
	}
	c.Forget(p)
	want := sha([]byte("content"))
	if got, err := c.FileSHA256(p); err != nil || got != want {
		t.Fatalf("after Forget: %s, %v", got, err)
	}
	for _, f := range files {
		if _, err := c.FileSHA256(f); err != nil {
			t.Fatal(err)
		}
		if got, err := c.FileSHA256(p); err != nil || got != want {
			t.Fatalf("after looking up %s: %s gave %s (%v), the digest Forget dropped", f, p, got, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if m, ok := readMemo(t, cacheDir)[p]; ok {
		if v, _ := m.get("sha256"); v != want {
			t.Errorf("saved %s for %s", v, p)
		}
	}
}

// Release lets go of the shards SaveNew wrote, having saved them: the
// next lookup reads its shard back. Of the digests the build derived,
// Checked still gives those of big files, which the layer writer would
// otherwise read twice.
func TestRelease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	var files []string
	for i := range 20 {
		p := filepath.Join(dir, "src", fmt.Sprintf("f%d", i))
		writeFile(t, p, []byte(p))
		files = append(files, p)
	}
	big := filepath.Join(dir, "src", "big")
	writeFile(t, big, bytes.Repeat([]byte{'b'}, keepChecked))
	files = append(files, big)
	settle()
	c, _ := openCache(t, cacheDir)
	defer c.Close()
	want := map[string]string{}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = sha(data)
		if got, err := c.FileSHA256(p); err != nil || got != want[p] {
			t.Fatalf("%s: %s (%v)", p, got, err)
		}
	}
	done := make(chan struct{})
	go func() { // lookups meanwhile (go test -race)
		defer close(done)
		for _, p := range files {
			if got, err := c.FileSHA256(p); err != nil || got != want[p] {
				t.Errorf("%s: %s (%v) while releasing", p, got, err)
			}
		}
	}()
	c.Release()
	<-done
	saved := readMemo(t, cacheDir)
	for _, p := range files {
		if v, _ := saved[p].get("sha256"); v != want[p] {
			t.Errorf("%s: saved %q, want %s", p, v, want[p])
		}
	}
	// The lookups meanwhile may have read shards back, which hold no
	// entries of their own.
	c.mu.Lock()
	held := 0
	for _, s := range c.shards {
		held += len(s.entries)
	}
	c.mu.Unlock()
	if held != 0 {
		t.Errorf("%d entries held after Release", held)
	}
	for _, p := range files {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sum, ok := c.Checked(p, info)
		if p == big && (!ok || sum != want[p]) {
			t.Errorf("%s: Checked gives %s, %v after Release, want its digest", p, sum, ok)
		}
		if p != big && ok {
			t.Errorf("%s: Checked after Release, which let go of it", p)
		}
		if got, err := c.FileSHA256(p); err != nil || got != want[p] {
			t.Errorf("%s: %s (%v) after Release", p, got, err)
		}
	}
}

// encodeShard is the shard of entries as the memo writes it.
func encodeShard(entries map[string]*memoEntry) []byte { return appendShard(nil, entries) }

// Release while SaveNew writes a shard keeps that shard until it is
// written: let go of at once, a lookup read the file being replaced
// back, and was given a digest Forget had dropped (which the build,
// were it to go on, would fail on again), and a fact only the shard
// being written held was lost once Close wrote the shard read back over
// it. Not parallel: it sets shardWriteHook.
func TestReleaseWhileSaveNewWrites(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	p, q, r, u := filepath.Join(dir, "src", "p"), filepath.Join(dir, "src", "q"), filepath.Join(dir, "src", "r"), filepath.Join(dir, "src", "u")
	for _, f := range []string{p, q, r, u} {
		writeFile(t, f, []byte(f))
	}
	c, _ := openCache(t, cacheDir)
	c.memoShards = 1
	// A damaged memo, which SaveNew writes: p's stamp with another
	// content's digest.
	bogus := sha([]byte("bogus"))
	if err := c.Learn(p, bogus); err != nil {
		t.Fatal(err)
	}
	if err := c.Learn(q, sha([]byte(q))); err != nil {
		t.Fatal(err)
	}
	c.SaveNew()
	// The layer writer finds p is not what the memo says, and r is
	// hashed after the first save.
	c.Forget(p)
	if err := c.Learn(r, sha([]byte(r))); err != nil {
		t.Fatal(err)
	}
	writing, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	shardWriteHook = func(int) {
		once.Do(func() {
			close(writing)
			select {
			case <-proceed:
			case <-time.After(10 * time.Second):
				t.Error("the lookup did not end while the shard was being written")
			}
		})
	}
	defer func() { shardWriteHook = nil }()
	saved, released := make(chan struct{}), make(chan struct{})
	go func() { defer close(saved); c.SaveNew() }()
	<-writing
	go func() { defer close(released); c.Release() }()
	// Release lets go of what it does at once, under the lock, then
	// waits for the SaveNew writing to save the rest.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		releasing := c.releasing
		c.mu.Unlock()
		if releasing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Release did not start")
		}
	}
	if got, err := c.FileSHA256(p); err != nil || got != sha([]byte(p)) {
		t.Errorf("%s while its shard was written: %s (%v), want %s", p, got, err, sha([]byte(p)))
	}
	close(proceed)
	<-saved
	<-released
	// A file looked up later changes the shard, which Close writes.
	if err := c.Learn(u, sha([]byte(u))); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	memo := readMemo(t, cacheDir)
	for _, f := range []string{p, q, r, u} {
		// p, young when it was hashed again, need not be remembered,
		// but not with the digest Forget dropped.
		m, ok := memo[f]
		if !ok {
			if f != p {
				t.Errorf("%s: not saved", f)
			}
		} else if v, _ := m.get("sha256"); v != sha([]byte(f)) {
			t.Errorf("%s: saved %q, want %s", f, v, sha([]byte(f)))
		}
	}
}

// A read of a shard that panics leaves the cache as it was: the lookup
// that read it panics holding the lock it was called with, which its
// deferred Unlock lets go of (else the process died, "unlock of unlocked
// mutex", whoever recovered), and a lookup waiting for the read wakes
// and reads the shard itself (else it waited for ever). Not parallel: it
// sets shardHook.
func TestShardReadPanicWakesWaiters(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	files, want := rememberedFiles(t, dir, cacheDir, 2, 1)
	c, _ := openCache(t, cacheDir)
	defer c.Close()
	c.memoShards = 1
	var reads atomic.Int32
	reading, waiting := make(chan struct{}), make(chan struct{})
	shardHook = func(i int, read bool) {
		if !read {
			close(waiting)
			return
		}
		if reads.Add(1) > 1 {
			return
		}
		close(reading)
		// The first read panics once the second lookup waits for it.
		select {
		case <-waiting:
		case <-time.After(10 * time.Second):
			t.Error("the second lookup did not wait for the shard being read")
		}
		panic("reading the shard")
	}
	defer func() { shardHook = nil }()
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		c.FileSHA256(files[0])
	}()
	<-reading
	looked := make(chan struct{})
	go func() {
		defer close(looked)
		if got, err := c.FileSHA256(files[1]); err != nil || got != want[files[1]] {
			t.Errorf("%s: %s (%v), want %s", files[1], got, err, want[files[1]])
		}
	}()
	if p := <-panicked; p != "reading the shard" {
		t.Errorf("the lookup whose read panicked recovered %v", p)
	}
	select {
	case <-looked:
	case <-time.After(10 * time.Second):
		t.Fatal("the lookup waiting for the read that panicked never woke")
	}
	if got, err := c.FileSHA256(files[0]); err != nil || got != want[files[0]] {
		t.Errorf("%s after the read that panicked: %s (%v), want %s", files[0], got, err, want[files[0]])
	}
}
