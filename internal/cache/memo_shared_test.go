package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sharedFiles makes n files under dir/name, each holding its path.
func sharedFiles(t *testing.T, dir, name string, n int) []string {
	t.Helper()
	var files []string
	for i := range n {
		p := filepath.Join(dir, name, fmt.Sprintf("f%02d", i))
		writeFile(t, p, []byte(p))
		files = append(files, p)
	}
	return files
}

// learnAll has c learn each of files with its content's digest.
func learnAll(t *testing.T, c *Cache, files []string) {
	t.Helper()
	for _, p := range files {
		if err := c.Learn(p, sha([]byte(p))); err != nil {
			t.Fatal(err)
		}
	}
}

// savedBefore has an earlier build learn files in the cache at cacheDir,
// in one shard, and save them (Close); it gives that build's cache.
func savedBefore(t *testing.T, cacheDir string, files []string) *Cache {
	t.Helper()
	c, _ := openCache(t, cacheDir)
	c.memoShards = 1
	learnAll(t, c, files)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

// memoHolds fails t for each of files the memo saved in cacheDir does
// not hold with its content's digest.
func memoHolds(t *testing.T, cacheDir, what string, files []string) {
	t.Helper()
	memo := readMemo(t, cacheDir)
	for _, p := range files {
		if m, ok := memo[p]; !ok {
			t.Errorf("%s: %s is not in the memo", what, p)
		} else if v, _ := m.get("sha256"); v != sha([]byte(p)) {
			t.Errorf("%s: %s is in the memo as %s", what, p, v)
		}
	}
}

// Two builds sharing a cache each save the shards they read with their
// own files, and a third finds both's: the last to save kept only its
// own (and what was there when it read the shard), and the other's
// files were hashed again. One shard, so that both write the same.
func TestMemoKeepsWhatAnotherBuildSaved(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"read from disk, saved by Close", "made from nothing, saved by SaveNew"} {
		dir := t.TempDir()
		cacheDir := filepath.Join(dir, "cache")
		earlier, mine, theirs := sharedFiles(t, dir, "earlier", 5), sharedFiles(t, dir, "mine", 5), sharedFiles(t, dir, "theirs", 5)
		fromDisk := strings.HasPrefix(how, "read")
		if fromDisk {
			savedBefore(t, cacheDir, earlier)
		}
		c1, _ := openCache(t, cacheDir)
		c2, _ := openCache(t, cacheDir)
		c1.memoShards, c2.memoShards = 1, 1
		if fromDisk {
			// Each reads the shard before the other saves it.
			for _, c := range []*Cache{c1, c2} {
				if got, err := c.FileSHA256(earlier[0]); err != nil || got != sha([]byte(earlier[0])) {
					t.Fatalf("%s: %s (%v) from the memo", how, got, err)
				}
			}
		}
		learnAll(t, c1, mine)
		learnAll(t, c2, theirs)
		if !fromDisk {
			c1.SaveNew()
			c2.SaveNew()
		}
		if err := c1.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c2.Close(); err != nil {
			t.Fatal(err)
		}
		memoHolds(t, cacheDir, how, mine)
		memoHolds(t, cacheDir, how, theirs)
		if fromDisk {
			memoHolds(t, cacheDir, how, earlier)
		}
	}
}

// Of a file two builds saw with different stamps, the memo keeps the
// newer, whichever build saves last; of one stamp, the facts of both. A
// file one build found the memo wrong about (Forget) stays forgotten
// when the other, which read the wrong digest too, saves first.
func TestMemoMergesByStamp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	p, q, w := filepath.Join(dir, "src", "p"), filepath.Join(dir, "src", "q"), filepath.Join(dir, "src", "wrong")
	writeFile(t, p, []byte("old"))
	writeFile(t, q, []byte("q"))
	writeFile(t, w, []byte("w"))
	bogus := sha([]byte("bogus"))
	c0, _ := openCache(t, cacheDir)
	c0.memoShards = 1
	if err := c0.Learn(w, bogus); err != nil {
		t.Fatal(err)
	}
	if err := c0.Close(); err != nil {
		t.Fatal(err)
	}

	c1, _ := openCache(t, cacheDir)
	c2, _ := openCache(t, cacheDir)
	c1.memoShards, c2.memoShards = 1, 1
	for _, c := range []*Cache{c1, c2} {
		if got, err := c.FileSHA256(w); err != nil || got != bogus {
			t.Fatalf("the damaged memo gave %s (%v)", got, err)
		}
	}
	c1.Forget(w)
	if err := c1.Learn(p, sha([]byte("old"))); err != nil {
		t.Fatal(err)
	}
	// A ctime later by more than any file system's granularity.
	time.Sleep(20 * time.Millisecond)
	writeFile(t, p, []byte("new"))
	if err := c2.Learn(p, sha([]byte("new"))); err != nil {
		t.Fatal(err)
	}
	newStamp := stampOf(t, p)
	// q: one stamp, a fact each.
	if err := c1.Learn(q, sha([]byte("q"))); err != nil {
		t.Fatal(err)
	}
	if err := c2.learnFact(q, "kind", "text"); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	memo := readMemo(t, cacheDir)
	if m, ok := memo[p]; !ok || m.st != newStamp {
		t.Errorf("%s: the memo holds %+v, want the newer stamp %+v", p, m, newStamp)
	} else if v, _ := m.get("sha256"); v != sha([]byte("new")) {
		t.Errorf("%s: the memo holds %s, want the new content's digest", p, v)
	}
	if m, ok := memo[q]; !ok {
		t.Errorf("%s: not in the memo", q)
	} else {
		sum, _ := m.get("sha256")
		kind, _ := m.get("kind")
		if sum != sha([]byte("q")) || kind != "text" {
			t.Errorf("%s: the memo holds sha256 %q, kind %q, want both builds' facts", q, sum, kind)
		}
	}
	if m, ok := memo[w]; ok {
		if v, _ := m.get("sha256"); v == bogus {
			t.Errorf("%s: the digest Forget dropped is in the memo again", w)
		}
	}
}

// A build saving the memo waits for another's save of it to end: both
// read back the shard's file and wrote it, and the one that read it
// before the other's write landed wrote over it. Not parallel: it sets
// shardWriteHook.
func TestMemoSavesWaitForEachOther(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	mine, theirs := sharedFiles(t, dir, "mine", 5), sharedFiles(t, dir, "theirs", 5)
	c1, _ := openCache(t, cacheDir)
	c2, _ := openCache(t, cacheDir)
	c1.memoShards, c2.memoShards = 1, 1
	learnAll(t, c1, mine)
	learnAll(t, c2, theirs)
	writing, proceed := make(chan struct{}), make(chan struct{})
	// The first write waits; the others, not (sync.Once would hold them).
	var paused atomic.Bool
	shardWriteHook = func(int) {
		if paused.CompareAndSwap(false, true) {
			close(writing)
			<-proceed
		}
	}
	defer func() { shardWriteHook = nil }()
	first := make(chan error, 1)
	go func() { first <- c1.Close() }()
	<-writing
	second := make(chan error, 1)
	go func() { second <- c2.Close() }()
	// c2 waits for c1's save; time enough for it to write over c1's
	// file if it did not.
	ended := false
	select {
	case err := <-second:
		ended = true
		t.Errorf("a save ended (%v) while another was writing the memo", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(proceed)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if !ended {
		select {
		case err := <-second:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the second save did not end once the first had")
		}
	}
	memoHolds(t, cacheDir, "saved at once", mine)
	memoHolds(t, cacheDir, "saved at once", theirs)
}

// A shard whose file cannot be read (an I/O error, a permission: not a
// file that is not there, nor one too big or damaged, which hold
// nothing to keep) is not saved over, which dropped every fact it held,
// and that is said once; once it reads again, it is saved with what
// this build added. Not parallel: it sets shardOpenHook.
func TestUnreadableShardKeepsItsFacts(t *testing.T) {
	for _, how := range []string{"unreadable", "unreadable at lookup only"} {
		dir := t.TempDir()
		cacheDir := filepath.Join(dir, "cache")
		earlier, mine := sharedFiles(t, dir, "earlier", 5), sharedFiles(t, dir, "mine", 5)
		shard := savedBefore(t, cacheDir, earlier).shardPath(0)
		before := mustRead(t, shard)

		ioErr := errors.New("input/output error")
		var opens atomic.Int32
		shardOpenHook = func(path string) error {
			if path != shard || how != "unreadable" && opens.Add(1) > 1 {
				return nil
			}
			return &fs.PathError{Op: "read", Path: path, Err: ioErr}
		}
		c, log := openCache(t, cacheDir)
		c.memoShards = 1
		// Hashed again: the shard could not be read.
		if got, err := c.FileSHA256(earlier[0]); err != nil || got != sha([]byte(earlier[0])) {
			t.Fatalf("%s: %s (%v)", how, got, err)
		}
		learnAll(t, c, mine)
		c.SaveNew()
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		learnAll(t, c, mine[:1])
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		shardOpenHook = nil
		memoHolds(t, cacheDir, how, earlier)
		if how == "unreadable" {
			if after := mustRead(t, shard); !bytes.Equal(after, before) {
				t.Errorf("%s: the shard was written", how)
			}
			if n := strings.Count(log.String(), "input/output error"); n != 1 {
				t.Errorf("%s: the unreadable shard was said %d times, want once:\n%s", how, n, log)
			}
			if !strings.Contains(log.String(), shard) {
				t.Errorf("%s: the warning does not name the shard:\n%s", how, log)
			}
		} else {
			memoHolds(t, cacheDir, how, mine)
			if log.String() != "" {
				t.Errorf("%s: warned:\n%s", how, log)
			}
		}
	}
}

// A memo whose lock cannot be taken (a cache on NFS without lock
// support, ENOLCK; here a directory where the lock file belongs, which
// Lock refuses) is saved as it was before saves took the lock, merged
// with what is on disk: Close failed and SaveNew left every shard
// unsaved, and each build hashed its inputs again.
func TestMemoSavedWithoutItsLock(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"read from disk, saved by Close", "made from nothing, saved by SaveNew"} {
		dir := t.TempDir()
		cacheDir := filepath.Join(dir, "cache")
		earlier, mine := sharedFiles(t, dir, "earlier", 5), sharedFiles(t, dir, "mine", 5)
		fromDisk := strings.HasPrefix(how, "read")
		if fromDisk {
			savedBefore(t, cacheDir, earlier)
		}
		c, _ := openCache(t, cacheDir)
		c.memoShards = 1
		lock := filepath.Join(cacheDir, "locks", memoLock+".lock")
		os.Remove(lock) // the file the earlier build's save left
		if err := os.MkdirAll(lock, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Lock(memoLock); err == nil {
			t.Fatal("the memo's lock was taken over a directory")
		}
		learnAll(t, c, mine)
		if fromDisk {
			if err := c.Close(); err != nil {
				t.Errorf("%s: %v", how, err)
			}
			memoHolds(t, cacheDir, how, earlier)
		} else {
			c.SaveNew()
			if _, err := os.Stat(c.shardPath(0)); err != nil {
				t.Errorf("%s: %v", how, err)
			}
		}
		memoHolds(t, cacheDir, how, mine)
	}
}

// A shard SaveNew wrote and the build changed again is saved by Close
// without reading back the file it wrote: its stamp is known. One that
// another build saved over meanwhile is read back, and what that build
// saved is kept; so is what this build's SaveNew merged from another
// build's file, though Close reads nothing. Not parallel: it sets
// shardOpenHook.
func TestSaveNewKnowsWhatItWrote(t *testing.T) {
	for _, how := range []string{"alone", "another build saved since", "another build saved before"} {
		dir := t.TempDir()
		cacheDir := filepath.Join(dir, "cache")
		mine, more, theirs := sharedFiles(t, dir, "mine", 5), sharedFiles(t, dir, "more", 5), sharedFiles(t, dir, "theirs", 5)
		c, _ := openCache(t, cacheDir)
		other, _ := openCache(t, cacheDir)
		c.memoShards, other.memoShards = 1, 1
		shard := c.shardPath(0)
		var reads atomic.Int32
		shardOpenHook = func(path string) error {
			if path == shard {
				reads.Add(1)
			}
			return nil
		}
		learnAll(t, c, mine)
		switch how {
		case "another build saved before":
			// Both made the shard from nothing; the other saved first.
			learnAll(t, other, theirs)
			other.SaveNew()
			c.SaveNew()
		case "another build saved since":
			c.SaveNew()
			learnAll(t, other, theirs)
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
		default:
			c.SaveNew()
		}
		readsBefore := reads.Load()
		learnAll(t, c, more)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		shardOpenHook = nil
		n := reads.Load() - readsBefore
		if want := int32(0); how == "another build saved since" {
			if n != 1 {
				t.Errorf("%s: Close read the shard %d times, want once", how, n)
			}
		} else if n != want {
			t.Errorf("%s: Close read back the shard SaveNew wrote (%d reads)", how, n)
		}
		memoHolds(t, cacheDir, how, mine)
		memoHolds(t, cacheDir, how, more)
		if how != "alone" {
			memoHolds(t, cacheDir, how, theirs)
		}
	}
}
