package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/tree"
)

// DefaultMemoLimit is how many files the digest memo remembers when
// Cache.MemoLimit is not set: about 70 MB on disk at most, of which a
// build reads only the shards holding the files it looks up. Each shard
// holds its share of the limit; paths do not spread evenly, and a limit
// of exactly one big build's files would make it forget some of them on
// every build.
const DefaultMemoLimit = 400_000

// memoShards is how many files the memo is split into, by a hash of the
// path: a build that looks up a few files reads a few shards (a few
// hundred entries each at the limit), however many files other builds
// left in the memo. Spreading by path rather than by directory keeps one
// huge directory from making one huge shard.
const memoShards = 256

// maxShardBytes is the largest shard that is read. A bigger one (from a
// bug, or written by hand) is ignored and rewritten within the limit:
// forgetting costs only rehashing.
var maxShardBytes int64 = 4 << 20

// memoMaxAge is how long an entry no build has used is kept.
const memoMaxAge = 30 // days

// settleTime is how long a file must have been left alone before facts
// about it are remembered: one changed again within its timestamps'
// granularity would keep the stamp it had when it was read.
const settleTime = 2 * time.Second

// memoMagic starts every shard; another version's shards are not read.
const memoMagic = "pallet memo 1\n"

// memoEntry remembers facts derived from a file's content (its digest,
// what kind of executable it is) with the stamp that was true when they
// were derived; a changed file no longer matches.
type memoEntry struct {
	st tree.Stamp
	// seen is the day (days since 1970, UTC) a build last used the entry:
	// when a shard is over its share of the limit, the longest unused go
	// first, and those unused for memoMaxAge days go anyway.
	seen int64
	// facts are held as a shard encodes them (see encodeFacts), a slice
	// of the shard read: a build reads every fact of 100,000 files and
	// changes few, and a slice of facts of its own per file was a fifth
	// of the memo's memory.
	facts string
	// used says this build used or made the entry; it is not saved.
	used bool
}

type fact struct{ name, value string }

// encodeFacts gives facts as a shard holds them: their number, then each
// name and value, lengths as uvarints.
func encodeFacts(facts ...fact) string {
	b := binary.AppendUvarint(nil, uint64(len(facts)))
	for _, f := range facts {
		b = binary.AppendUvarint(b, uint64(len(f.name)))
		b = append(b, f.name...)
		b = binary.AppendUvarint(b, uint64(len(f.value)))
		b = append(b, f.value...)
	}
	return string(b)
}

// noFacts is encodeFacts().
const noFacts = "\x00"

// decodeFacts appends to dst the facts encodeFacts wrote at the start of
// s (slices of s), and says how many bytes they took; ok is false if s is
// cut short. A caller passing a small array of its own allocates nothing.
func decodeFacts(dst []fact, s string) (facts []fact, n int, ok bool) {
	uv := func() (uint64, bool) {
		// binary.Uvarint wants bytes; a varint is at most 10 of them.
		v, k := binary.Uvarint([]byte(s[n:min(len(s), n+binary.MaxVarintLen64)]))
		if k <= 0 {
			return 0, false
		}
		n += k
		return v, true
	}
	str := func() (string, bool) {
		l, ok := uv()
		if !ok || l > uint64(len(s)-n) {
			return "", false
		}
		n += int(l)
		return s[n-int(l) : n], true
	}
	count, ok := uv()
	if !ok || count > uint64(len(s)) {
		return nil, 0, false
	}
	facts = dst
	for range count {
		name, ok1 := str()
		value, ok2 := str()
		if !ok1 || !ok2 {
			return nil, 0, false
		}
		facts = append(facts, fact{name, value})
	}
	return facts, n, true
}

func (m *memoEntry) get(name string) (string, bool) {
	var buf [4]fact
	facts, _, _ := decodeFacts(buf[:0], m.facts)
	for _, f := range facts {
		if f.name == name {
			return f.value, true
		}
	}
	return "", false
}

func (m *memoEntry) set(name, value string) {
	facts, _, _ := decodeFacts(nil, m.facts)
	i := slices.IndexFunc(facts, func(f fact) bool { return f.name == name })
	if i < 0 {
		facts = append(facts, fact{name, value})
	} else {
		facts[i].value = value
	}
	m.facts = encodeFacts(facts...)
}

// memoShard is the part of the memo one file on disk holds.
type memoShard struct {
	entries map[string]*memoEntry
	dirty   bool
}

// fileID names a file by device and inode, which renaming it or its
// directory keeps.
type fileID struct{ dev, ino uint64 }

// learnedDigest is a digest this build computed of a file's content (or
// wrote the file with), and the file's stamp then.
type learnedDigest struct {
	st  tree.Stamp
	sum string
}

func today() int64 { return time.Now().Unix() / 86400 }

func (c *Cache) memoDir() string { return filepath.Join(c.dir, "memo") }

func (c *Cache) shardOf(path string) int {
	n := c.memoShards
	if n <= 0 {
		n = memoShards
	}
	// FNV-1a: stable across processes, and cheap enough to run for every
	// lookup.
	h := uint32(2166136261)
	for i := 0; i < len(path); i++ {
		h ^= uint32(path[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

func (c *Cache) shardPath(i int) string {
	return filepath.Join(c.memoDir(), fmt.Sprintf("%02x", i))
}

// shard returns the shard holding path, reading it the first time. A
// missing, oversized or damaged shard only costs rehashing; the latter two
// are rewritten at Close. Called with c.mu held.
func (c *Cache) shard(path string) *memoShard {
	i := c.shardOf(path)
	if s, ok := c.shards[i]; ok {
		return s
	}
	s := &memoShard{entries: map[string]*memoEntry{}}
	c.shards[i] = s
	info, err := os.Stat(c.shardPath(i))
	if err != nil {
		return s
	}
	if info.Size() > maxShardBytes {
		s.dirty = true
		return s
	}
	data, err := os.ReadFile(c.shardPath(i))
	if err != nil {
		return s
	}
	if s.entries, err = decodeShard(data); err != nil {
		s.entries = map[string]*memoEntry{}
		s.dirty = true
	}
	return s
}

// FileSHA256 returns the sha256 of the file at path, from memory while
// the file's stamp (size, mtime, ctime, inode, device) is the one it had
// when last hashed. This is what keeps a no-op rebuild from reading every
// input again.
func (c *Cache) FileSHA256(path string) (string, error) {
	return c.RememberAt(path, tree.Stamp{}, "sha256", HashFile)
}

// FileDigest is FileSHA256 for a file whose stamp the caller took (a tree
// entry's): it is not stat'ed again.
func (c *Cache) FileDigest(path string, st tree.Stamp) (string, error) {
	return c.RememberAt(path, st, "sha256", HashFile)
}

// Remember returns derive(path), a fact about the file's content named
// fact, from memory while the file's stamp (size, mtime, ctime, inode,
// device) is the one it had when the fact was derived.
func (c *Cache) Remember(path, fact string, derive func(string) (string, error)) (string, error) {
	return c.RememberAt(path, tree.Stamp{}, fact, derive)
}

// RememberAt is Remember for a file whose stamp st the caller took
// earlier in this build (zero: stat it now). A file changed since has
// another content than the fact says, which the layer writer catches: it
// checks every file against the digest its layer's key was made of.
func (c *Cache) RememberAt(path string, st tree.Stamp, fact string, derive func(string) (string, error)) (string, error) {
	if !st.Known() {
		info, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		st = tree.StampOf(info)
	}
	if v, ok := c.recall(path, fact, st); ok {
		return v, nil
	}
	if fact == "sha256" {
		// Written, or read in full, by this build: see Learn.
		if sum, ok := c.learned(st); ok {
			c.store(path, fact, sum, st)
			return sum, nil
		}
	}
	v, err := derive(path)
	if err != nil {
		return "", err
	}
	// Only a file that had settled before it was read, and is the same
	// after, is known to have had this content all along.
	if st.Settled(time.Now(), settleTime) {
		if after, err := os.Stat(path); err == nil && tree.StampOf(after) == st {
			c.store(path, fact, v, st)
			if fact == "sha256" {
				c.learn(st, v)
			}
		}
	}
	return v, nil
}

// Learn records that this build wrote the file at path with content
// whose sha256 is sum (hashed as it was written), so that no later step
// of this build, nor a later build, reads it again while its stamp is the
// one it has now. Unlike a fact derived from a file found on disk, it is
// remembered at once, without waiting for the file to settle: pallet made
// the file, under a directory of its own, and nothing else writes there.
// Call it once the file is in its final state: linking or unlinking the
// file changes its ctime, and with it the stamp.
func (c *Cache) Learn(path, sum string) error {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return err // a link's digest would be learned for its target
	}
	st := tree.StampOf(info)
	c.learn(st, sum)
	c.store(path, "sha256", sum, st)
	return nil
}

// Wrote is Learn for a file whose name does not last (unpacked into a
// work directory, or in a cache entry not yet committed): this build
// knows it by its stamp, whatever it is called when next looked up, and
// the memo gets no entry under a name that will be gone.
func (c *Cache) Wrote(path, sum string) error {
	// Lstat: an archive may replace a file it wrote with a symlink to
	// another, whose stamp must not take this content's digest.
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return err
	}
	c.learn(tree.StampOf(info), sum)
	return nil
}

// Checked gives the sha256 this build computed of the file whose status
// is info, if it did (by writing it, or by reading it once it had
// settled): the layer writer takes it instead of hashing the file again,
// as long as the file keeps that status while it is copied.
func (c *Cache) Checked(_ string, info fs.FileInfo) (string, bool) {
	return c.learned(tree.StampOf(info))
}

func (c *Cache) learn(st tree.Stamp, sum string) {
	if st.Ino == 0 {
		return // no file identity on this system
	}
	c.mu.Lock()
	c.learnedDigests[fileID{st.Dev, st.Ino}] = learnedDigest{st: st, sum: sum}
	c.mu.Unlock()
}

// Learned gives the sha256 this build computed of the file whose stamp is
// st, if it did (see Checked).
func (c *Cache) Learned(st tree.Stamp) (string, bool) { return c.learned(st) }

func (c *Cache) learned(st tree.Stamp) (string, bool) {
	if st.Ino == 0 {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.learnedDigests[fileID{st.Dev, st.Ino}]
	if !ok || l.st != st {
		return "", false
	}
	return l.sum, true
}

func (c *Cache) recall(path, fact string, st tree.Stamp) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shard(path)
	m, ok := s.entries[path]
	if !ok || m.st != st {
		return "", false
	}
	v, known := m.get(fact)
	if !known {
		return "", false
	}
	m.used = true
	if d := today(); m.seen != d {
		m.seen = d
		s.dirty = true
	}
	return v, true
}

func (c *Cache) store(path, fact, v string, st tree.Stamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shard(path)
	m, ok := s.entries[path]
	if !ok || m.st != st {
		m = &memoEntry{st: st}
		s.entries[path] = m
	}
	if old, ok := m.get(fact); ok && old == v && m.used && m.seen == today() {
		return
	}
	m.set(fact, v)
	m.seen = today()
	m.used = true
	s.dirty = true
}

// Close saves the shards of the digest memo this build changed, pruned:
// see prune.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.save()
}

// Flush saves the memo as Close does and lets go of the shards read, for
// a build whose remaining steps look up few files: those are read again
// as they are looked up. What the build computed itself (Learned) is kept.
func (c *Cache) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.save(); err != nil {
		return err
	}
	clear(c.shards)
	return nil
}

// save writes the dirty shards. Called with c.mu held.
func (c *Cache) save() error {
	var dirty []int
	for i, s := range c.shards {
		if s.dirty {
			dirty = append(dirty, i)
		}
	}
	if len(dirty) == 0 {
		return nil
	}
	if err := os.MkdirAll(c.memoDir(), 0o755); err != nil {
		return fmt.Errorf("cache %s: digest memo: %w", c.dir, err)
	}
	n := c.memoShards
	if n <= 0 {
		n = memoShards
	}
	limit := c.MemoLimit
	if limit <= 0 {
		limit = DefaultMemoLimit
	}
	share := (limit + n - 1) / n
	for _, i := range dirty {
		s := c.shards[i]
		s.prune(share)
		if err := tempfile.WriteFile(c.shardPath(i), encodeShard(s.entries)); err != nil {
			return fmt.Errorf("cache %s: digest memo: %w", c.dir, err)
		}
		s.dirty = false
	}
	return nil
}

// prune drops the entries that can never match again (the file is gone,
// or has another stamp: a ctime never goes back) or that no build used for
// memoMaxAge days, then, above limit, those used longest ago. Entries this
// build used were checked when used and are not looked at again; the rest
// are a shard's worth of stat calls at most.
func (s *memoShard) prune(limit int) {
	old := today() - memoMaxAge
	for path, m := range s.entries {
		if m.used {
			continue
		}
		if m.seen < old || m.facts == "" || m.facts == noFacts {
			delete(s.entries, path)
			continue
		}
		info, err := os.Stat(path)
		// A file that cannot be stat'ed cannot be looked up either.
		if err != nil || tree.StampOf(info) != m.st {
			delete(s.entries, path)
		}
	}
	if len(s.entries) <= limit {
		return
	}
	paths := make([]string, 0, len(s.entries))
	for p := range s.entries {
		paths = append(paths, p)
	}
	// First to go: not used by this build, then used longest ago.
	slices.SortFunc(paths, func(a, b string) int {
		ma, mb := s.entries[a], s.entries[b]
		if ma.used != mb.used {
			if ma.used {
				return 1
			}
			return -1
		}
		if ma.seen != mb.seen {
			return int(ma.seen - mb.seen)
		}
		return strings.Compare(a, b)
	})
	for _, p := range paths[:len(paths)-limit] {
		delete(s.entries, p)
	}
}

// encodeShard writes entries sorted by path, so that equal memos are
// equal files: per entry the path, the stamp, the day last seen and the
// facts, lengths and numbers as varints.
func encodeShard(entries map[string]*memoEntry) []byte {
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	b := []byte(memoMagic)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, p := range paths {
		m := entries[p]
		str(p)
		b = binary.AppendVarint(b, m.st.Size)
		b = binary.AppendVarint(b, m.st.ModTime)
		b = binary.AppendVarint(b, m.st.CTime)
		b = binary.AppendUvarint(b, m.st.Ino)
		b = binary.AppendUvarint(b, m.st.Dev)
		b = binary.AppendVarint(b, m.seen)
		facts := m.facts
		if facts == "" {
			facts = noFacts
		}
		b = append(b, facts...)
	}
	return b
}

var errShard = errors.New("damaged memo shard")

func decodeShard(data []byte) (map[string]*memoEntry, error) {
	r, ok := bytes.CutPrefix(data, []byte(memoMagic))
	if !ok {
		return nil, errShard
	}
	// Paths and facts are slices of one copy of the shard rather than a
	// string each: a 100,000-file build reads 300,000 of them.
	whole := string(data)
	uv := func() uint64 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			ok = false
			return 0
		}
		r = r[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(r)
		if n <= 0 {
			ok = false
			return 0
		}
		r = r[n:]
		return v
	}
	str := func() string {
		n := uv()
		if !ok || n > uint64(len(r)) {
			ok = false
			return ""
		}
		at := len(data) - len(r)
		r = r[n:]
		return whole[at : at+int(n)]
	}
	out := map[string]*memoEntry{}
	for len(r) > 0 {
		p := str()
		m := &memoEntry{}
		m.st.Size, m.st.ModTime, m.st.CTime = sv(), sv(), sv()
		m.st.Ino, m.st.Dev = uv(), uv()
		m.seen = sv()
		if !ok {
			return nil, errShard
		}
		at := len(data) - len(r)
		var buf [4]fact
		_, n, factsOK := decodeFacts(buf[:0], whole[at:])
		if !factsOK {
			return nil, errShard
		}
		m.facts = whole[at : at+n]
		r = r[n:]
		out[p] = m
	}
	return out, nil
}
