package cache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/pallet-dev/pallet/internal/tempfile"
)

// DefaultMemoLimit is how many files the digest memo remembers when
// Cache.MemoLimit is not set. An entry takes about 250 bytes of
// digests.json, which every build reads whole.
const DefaultMemoLimit = 100_000

// maxMemoBytes is the largest digests.json that is read. A bigger one
// (from a bug, or written by hand) is ignored and rewritten within the
// limit: forgetting costs only rehashing.
var maxMemoBytes int64 = 64 << 20

// settleTime is how long a file must have been left alone before facts
// about it are remembered: one changed again within its timestamps'
// granularity would keep the stamp it had when it was read.
const settleTime = 2 * time.Second

// stamp identifies one version of a file without reading it, by what
// git's index compares: size, mtime, ctime, inode and device. Rewriting a
// file in place and restoring its mtime (os.Chtimes, touch -r, tar -x)
// keeps size and mtime, but the kernel sets the ctime to the time of the
// change and no program can set it back.
type stamp struct {
	Size, ModTime, CTime int64
	Ino, Dev             uint64
}

func stampOf(info os.FileInfo) stamp {
	ino, dev, ctime := sysStamp(info)
	return stamp{Size: info.Size(), ModTime: info.ModTime().UnixNano(), CTime: ctime, Ino: ino, Dev: dev}
}

// settled reports whether the file was last changed (content or status)
// longer than settleTime before now.
func (s stamp) settled(now time.Time) bool {
	return now.UnixNano()-max(s.ModTime, s.CTime) > int64(settleTime)
}

// statMemo remembers facts derived from a file's content (its digest,
// what kind of executable it is) with the stamp that was true when they
// were derived; a changed file no longer matches. Entries written before
// ctime and dev were recorded have zeros there, match no file on a system
// that reports them, and are derived again once.
type statMemo struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"`
	CTime   int64  `json:"ctime"`
	Ino     uint64 `json:"ino"`
	Dev     uint64 `json:"dev"`
	// Seen is the day (days since 1970, UTC) a build last used the entry:
	// when the memo is over its limit, the longest unused go first.
	Seen  int64             `json:"seen,omitempty"`
	Facts map[string]string `json:"facts"`
}

func (m statMemo) stamp() stamp {
	return stamp{Size: m.Size, ModTime: m.ModTime, CTime: m.CTime, Ino: m.Ino, Dev: m.Dev}
}

func today() int64 { return time.Now().Unix() / 86400 }

func (c *Cache) memoPath() string { return filepath.Join(c.dir, "digests.json") }

// loadMemo reads digests.json. A missing, oversized or damaged memo only
// costs rehashing; the latter two are rewritten at Close.
func (c *Cache) loadMemo() {
	c.memo = map[string]statMemo{}
	info, err := os.Stat(c.memoPath())
	if err != nil {
		return
	}
	if info.Size() > maxMemoBytes {
		c.memoDirty = true
		return
	}
	data, err := os.ReadFile(c.memoPath())
	if err != nil {
		return
	}
	if err := json.Unmarshal(data, &c.memo); err != nil {
		c.memo = map[string]statMemo{}
		c.memoDirty = true
	}
}

// FileSHA256 returns the sha256 of the file at path, from memory while
// the file's stamp (size, mtime, ctime, inode, device) is the one it had
// when last hashed. This is what keeps a no-op rebuild from reading every
// input again.
func (c *Cache) FileSHA256(path string) (string, error) {
	return c.Remember(path, "sha256", HashFile)
}

// Remember returns derive(path), a fact about the file's content named
// fact, from memory while the file's stamp (size, mtime, ctime, inode,
// device) is the one it had when the fact was derived.
func (c *Cache) Remember(path, fact string, derive func(string) (string, error)) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st := stampOf(info)
	if v, ok := c.recall(path, fact, st); ok {
		return v, nil
	}
	v, err := derive(path)
	if err != nil {
		return "", err
	}
	// Only a file that had settled before it was read, and is the same
	// after, is known to have had this content all along.
	if st.settled(time.Now()) {
		if after, err := os.Stat(path); err == nil && stampOf(after) == st {
			c.store(path, fact, v, st)
		}
	}
	return v, nil
}

func (c *Cache) recall(path, fact string, st stamp) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.memo[path]
	v, known := m.Facts[fact]
	if !ok || !known || m.stamp() != st {
		return "", false
	}
	c.touched[path] = true
	if d := today(); m.Seen != d {
		m.Seen = d
		c.memo[path] = m
		c.memoDirty = true
	}
	return v, true
}

func (c *Cache) store(path, fact, v string, st stamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.memo[path]
	if !ok || m.stamp() != st {
		m = statMemo{Size: st.Size, ModTime: st.ModTime, CTime: st.CTime, Ino: st.Ino, Dev: st.Dev}
	}
	if m.Facts == nil {
		m.Facts = map[string]string{}
	}
	m.Facts[fact] = v
	m.Seen = today()
	c.memo[path] = m
	c.touched[path] = true
	c.memoDirty = true
}

// Close saves the digest memo, pruned: see pruneMemo.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.memoDirty {
		return nil
	}
	c.pruneMemo()
	data, err := json.Marshal(c.memo)
	if err != nil {
		return fmt.Errorf("cache %s: digest memo: %w", c.dir, err)
	}
	if err := tempfile.WriteFile(c.memoPath(), data); err != nil {
		return fmt.Errorf("cache %s: digest memo: %w", c.dir, err)
	}
	c.memoDirty = false
	return nil
}

// pruneBatch is how many entries one save looks at for files gone or
// changed: about 60 ms of stat calls. Map order is random, so successive
// builds cover the whole memo.
const pruneBatch = 20_000

// pruneMemo drops the entries that can never match again (the file is
// gone, or has another stamp: a ctime never goes back), then, above the
// limit, those used longest ago. Entries this build used were checked
// when used and are not looked at again. Called with c.mu held.
func (c *Cache) pruneMemo() {
	looked := 0
	for path, m := range c.memo {
		if c.touched[path] {
			continue
		}
		if looked++; looked > pruneBatch {
			break
		}
		info, err := os.Stat(path)
		// A file that cannot be stat'ed cannot be looked up either.
		if err != nil || stampOf(info) != m.stamp() || m.Facts == nil {
			delete(c.memo, path)
		}
	}
	limit := c.MemoLimit
	if limit <= 0 {
		limit = DefaultMemoLimit
	}
	if len(c.memo) <= limit {
		return
	}
	paths := make([]string, 0, len(c.memo))
	for p := range c.memo {
		paths = append(paths, p)
	}
	// First to go: not used by this build, then used longest ago.
	sort.Slice(paths, func(i, j int) bool {
		pi, pj := paths[i], paths[j]
		if ti, tj := c.touched[pi], c.touched[pj]; ti != tj {
			return !ti
		}
		if si, sj := c.memo[pi].Seen, c.memo[pj].Seen; si != sj {
			return si < sj
		}
		return pi < pj
	})
	for _, p := range paths[:len(paths)-limit] {
		delete(c.memo, p)
	}
}
