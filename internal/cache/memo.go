package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
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

// memoMagic starts every shard; another version's shards are not read
// (version 1 held every path whole: see appendShard).
const memoMagic = "pallet memo 2\n"

// memoRestart is how often a shard holds a path whole: every
// memoRestart-th entry, from the first. Those are what a lookup searches
// by bisection; it then reads at most memoRestart paths on from there.
const memoRestart = 16

// memoEntry remembers facts derived from a file's content (its digest,
// what kind of executable it is) with the stamp that was true when they
// were derived; a changed file no longer matches.
type memoEntry struct {
	st tree.Stamp
	// facts are held as a shard encodes them (see encodeFacts), a slice
	// of the shard read: a build reads every fact of 100,000 files and
	// changes few, and a slice of facts of its own per file was a fifth
	// of the memo's memory.
	facts string
	// extra holds, encoded the same way, the facts this build added to
	// an entry that had some: facts already handed out (a sha256 that a
	// record and a layer key keep) are slices of facts, which a new
	// string of every fact would not free.
	extra string
	// seen is the day (days since 1970, UTC) a build last used the entry:
	// when a shard is over its share of the limit, the longest unused go
	// first, and those unused for memoMaxAge days go anyway. (It and the
	// flags come last, where they fit in the space a field of 8 bytes
	// would leave.)
	seen int32
	// used says this build used or made the entry; it is not saved.
	used bool
	// checked says this build derived the sha256 fact itself, by reading
	// the file once it had settled: what Checked gives. It is not saved.
	checked bool
}

type fact struct{ name, value string }

// encodeFacts gives facts as a shard holds them: their number, then each
// name and value, lengths as uvarints. It is the one allocation a fact
// stored costs, of the bytes kept: a cold build stores one for each of
// its files, and the bytes at their longest, copied into a string, were
// as much again of garbage.
func encodeFacts(facts ...fact) string {
	n := uvarintLen(uint64(len(facts)))
	for _, f := range facts {
		n += uvarintLen(uint64(len(f.name))) + len(f.name) + uvarintLen(uint64(len(f.value))) + len(f.value)
	}
	var sb strings.Builder
	sb.Grow(n)
	var num [binary.MaxVarintLen64]byte
	sb.Write(binary.AppendUvarint(num[:0], uint64(len(facts))))
	for _, f := range facts {
		sb.Write(binary.AppendUvarint(num[:0], uint64(len(f.name))))
		sb.WriteString(f.name)
		sb.Write(binary.AppendUvarint(num[:0], uint64(len(f.value))))
		sb.WriteString(f.value)
	}
	return sb.String()
}

// uvarintLen is how many bytes binary.AppendUvarint writes for v.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
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
	for _, enc := range [...]string{m.facts, m.extra} {
		var buf [4]fact
		facts, _, _ := decodeFacts(buf[:0], enc)
		for _, f := range facts {
			if f.name == name {
				return f.value, true
			}
		}
	}
	return "", false
}

func (m *memoEntry) set(name, value string) {
	// The facts decoded into arrays of set's own: a file has a few.
	if _, ok := m.get(name); !ok && m.facts != "" && m.facts != noFacts {
		var buf [4]fact
		extra, _, _ := decodeFacts(buf[:0], m.extra)
		m.extra = encodeFacts(append(extra, fact{name, value})...)
		return
	}
	var buf [8]fact
	facts, _, _ := decodeFacts(buf[:0], m.facts)
	var more [4]fact
	if extra, _, ok := decodeFacts(more[:0], m.extra); ok {
		facts = append(facts, extra...)
	}
	i := slices.IndexFunc(facts, func(f fact) bool { return f.name == name })
	if i < 0 {
		facts = append(facts, fact{name, value})
	} else {
		facts[i].value = value
	}
	m.facts, m.extra = encodeFacts(facts...), ""
}

// all is every fact of m.
func (m *memoEntry) all() []fact {
	facts, _, _ := decodeFacts(nil, m.facts)
	if more, _, ok := decodeFacts(nil, m.extra); ok {
		facts = append(facts, more...)
	}
	return facts
}

// encoded is m's facts as a shard holds them.
func (m *memoEntry) encoded() string {
	if m.extra == "" {
		return m.facts
	}
	return encodeFacts(m.all()...)
}

// memoShard is the part of the memo one file on disk holds.
type memoShard struct {
	// data is the shard as read, and at the offset of each of its
	// entries, in path order: an entry this build does not change is
	// looked up where it is, by binary search, rather than decoded into
	// a map. A 100,000-file build reads every entry and changes few; a
	// map of them was twice the memory of the shards' bytes.
	data string
	at   []uint32
	// used has bit i set when this build used the entry at at[i].
	used []uint64
	// buf is where find puts the paths it reads back.
	buf []byte
	// entries are the entries this build made or changed, which hide
	// data's.
	entries map[string]*memoEntry
	dirty   bool
	// saving says SaveNew is writing the shard's file, with what it held
	// when it was marked clean: Release keeps it until the file is in
	// place, as a lookup would read back the file being replaced.
	saving bool
	// evictAt is the size of entries at which evict next looks for
	// entries no save would keep (0: the shard's share and a quarter).
	evictAt int
	// file is the stamp of the file data was read from (zero: none
	// was): saving, a file with another has been written by another
	// build since, and what it holds is merged (see onDisk).
	file tree.Stamp
}

// find looks path up in the entries as read: by bisection among those
// holding their path whole, then on from there.
func (s *memoShard) find(path string) (int, memoEntry, bool) {
	if len(s.at) == 0 {
		return 0, memoEntry{}, false
	}
	restarts := (len(s.at) + memoRestart - 1) / memoRestart
	// The first restart whose path is past path; the block before it
	// holds path, if any does.
	r := sort.Search(restarts, func(r int) bool {
		_, whole := keyAt(s.data, s.at[r*memoRestart])
		return whole > path
	})
	if r == 0 {
		return 0, memoEntry{}, false
	}
	start := (r - 1) * memoRestart
	buf := s.buf[:0]
	defer func() { s.buf = buf[:0] }()
	// match is how much of path the path read last (buf) holds: the
	// next, which shares shared bytes with buf, is compared from the
	// lesser of the two on, not from its start (the cache entry's
	// directory, a hundred bytes, at each step).
	match := 0
	for i := start; i < min(start+memoRestart, len(s.at)); i++ {
		shared, suffix := keyAt(s.data, s.at[i])
		from := min(shared, match)
		buf = append(buf[:shared], suffix...)
		match = from
		for match < len(buf) && match < len(path) && buf[match] == path[match] {
			match++
		}
		switch {
		case match == len(buf) && match == len(path):
			m := entryAt(s.data, s.at[i])
			m.used = s.used[i/64]&(1<<(i%64)) != 0
			return i, m, true
		case match == len(path) || match < len(buf) && buf[match] > path[match]:
			return 0, memoEntry{}, false // buf sorts after path
		}
	}
	return 0, memoEntry{}, false
}

// all gives every entry, those read as the last build left them but
// for what this build did: marked used, and seen today.
func (s *memoShard) all() map[string]*memoEntry {
	out := make(map[string]*memoEntry, len(s.at)+len(s.entries))
	eachEntry(s.data, s.at, func(i int, p string, m memoEntry) {
		if s.used[i/64]&(1<<(i%64)) != 0 {
			m.used, m.seen = true, today()
		}
		out[p] = &m
	})
	maps.Copy(out, s.entries)
	return out
}

// fileID names a file by device and inode, which renaming it or its
// directory keeps.
type fileID struct{ dev, ino uint64 }

// learnedDigest is a digest this build computed of a file's content (or
// wrote the file with), and the file's stamp then but for its identity,
// which is the key. The digest is kept as bytes, not hex: for a million
// files unpacked, a string each was 64 MB more.
type learnedDigest struct {
	size, mtime, ctime int64
	sum                [sha256.Size]byte
}

func (l learnedDigest) is(st tree.Stamp) bool {
	return l.size == st.Size && l.mtime == st.ModTime && l.ctime == st.CTime
}

// today is the day (since 1970, UTC): an int32 keeps a memo entry made
// this build within 80 bytes, which for 100,000 files is 1.6 MB.
func today() int32 { return int32(time.Now().Unix() / 86400) }

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
// are rewritten at Close. Called with c.mu held, which it lets go of while
// it reads: the digest workers each look up another file, mostly of
// another shard, and a no-op build's first lookups of a few hundred
// shards were read one after another under the lock. A lookup of a shard
// another is reading waits for that read, so that each is read once; as
// the lock was let go of, the caller finds the memo as it is then.
func (c *Cache) shard(path string) *memoShard {
	i := c.shardOf(path)
	for {
		if s, ok := c.shards[i]; ok {
			return s
		}
		if l, ok := c.loading[i]; ok {
			c.mu.Unlock()
			if shardHook != nil {
				shardHook(i, false)
			}
			<-l
			c.mu.Lock()
			// Read, but it may be gone again (Flush, Release), or its
			// read may have panicked: then this lookup reads it.
			continue
		}
		if c.loading == nil {
			c.loading = map[int]chan struct{}{}
		}
		l := make(chan struct{})
		c.loading[i] = l
		s := c.readShardUnlocked(i, l)
		// No one else put shard i in place meanwhile: the others waited,
		// and Flush and Release only let go of shards held.
		c.shards[i] = s
		return s
	}
}

// readShardUnlocked reads shard i without c.mu, which it is called with
// and returns with, and wakes the lookups waiting on l. However the read
// ends, the lock is held again and they wake: a read that panicked left
// the lock let go of under the caller's deferred Unlock, which kills the
// process whoever recovers, and the lookups waiting for ever.
func (c *Cache) readShardUnlocked(i int, l chan struct{}) *memoShard {
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.loading, i)
		close(l)
	}()
	return c.readShardAt(i)
}

// shardHook, set by tests, is called as shard i's file is about to be read
// (reading), and as a lookup starts to wait for another's read of it.
var shardHook func(i int, reading bool)

// shardWriteHook, set by tests, is called as shard i's file is about to
// be written.
var shardWriteHook func(i int)

// readShardAt reads shard i from its file. Called without c.mu.
func (c *Cache) readShardAt(i int) *memoShard {
	if shardHook != nil {
		shardHook(i, true)
	}
	s := &memoShard{entries: map[string]*memoEntry{}}
	data, st, err := readShard(c.shardPath(i))
	if errors.Is(err, errShard) {
		s.dirty = true
		return s
	}
	// Any other error is a miss here; saving tells a file that may hold
	// facts from one that does not (see onDisk).
	if err != nil {
		return s
	}
	if s.data, s.at, err = indexShard(data); err != nil {
		s.dirty = true
		return s
	}
	s.file = st
	s.used = make([]uint64, (len(s.at)+63)/64)
	return s
}

// shardOpenHook, set by tests, is called as the shard file at path is
// about to be opened: an error it gives is the open's.
var shardOpenHook func(path string) error

// shardBuffers are what shards are read through.
var shardBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readShard reads the shard at path, straight into the string the memo
// keeps: os.ReadFile and a string of its bytes were twice the memory to
// fill, a tenth of a no-op build's CPU. errShard says it is too big.
// The stamp is the file's as it was opened.
func readShard(path string) (string, tree.Stamp, error) {
	if shardOpenHook != nil {
		if err := shardOpenHook(path); err != nil {
			return "", tree.Stamp{}, err
		}
	}
	f, err := bounded.Open(path)
	if err != nil {
		return "", tree.Stamp{}, err
	}
	defer f.Close()
	if err := bounded.Regular(f); err != nil {
		return "", tree.Stamp{}, err
	}
	info, err := f.Stat()
	if err != nil {
		return "", tree.Stamp{}, err
	}
	if info.Size() > maxShardBytes {
		return "", tree.Stamp{}, errShard
	}
	var sb strings.Builder
	sb.Grow(int(info.Size()))
	buf := shardBuffers.Get().(*[]byte)
	defer shardBuffers.Put(buf)
	// One that grew since is read as far as the limit, and then found
	// damaged if it is cut there.
	if _, err := io.CopyBuffer(&sb, io.LimitReader(f, maxShardBytes), *buf); err != nil {
		return "", tree.Stamp{}, err
	}
	return sb.String(), tree.StampOf(info), nil
}

// shardFile is what a shard's file holds, as indexShard gives it.
type shardFile struct {
	data string
	at   []uint32
}

// onDisk gives what shard i's file holds that a save must keep: the
// entries another build saved there since this one read the shard (its
// file then had the stamp known). Two builds sharing a cache each read a
// shard, added their files and saved it, and the last save lost the
// other's: a tree of 100,000 files was hashed again. Nothing is kept of
// a file that holds no facts: none, one not regular (a directory is
// moved out of the way by replace, a link or a pipe is replaced by the
// rename), one too big or damaged (rewritten, as when read). An error is
// a file that may hold facts but cannot be read: it is not to be written
// over, as a save would drop every fact it holds for an error that may
// not last (EIO, EACCES). Called under the memo's file lock.
func (c *Cache) onDisk(i int, known tree.Stamp) (shardFile, error) {
	path := c.shardPath(i)
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return shardFile{}, nil
	case err != nil:
		return shardFile{}, err
	case !info.Mode().IsRegular():
		return shardFile{}, nil
	case known.Ino != 0 && tree.StampOf(info) == known:
		// What the shard was read from: a rename into place makes a new
		// inode, and a rewrite in place a new ctime. (Without an inode,
		// on Windows, the file is read again.)
		return shardFile{}, nil
	}
	data, _, err := readShard(path)
	switch {
	case errors.Is(err, errShard), errors.Is(err, fs.ErrNotExist), errors.Is(err, bounded.ErrNotRegular):
		return shardFile{}, nil
	case err != nil:
		return shardFile{}, err
	}
	data, at, err := indexShard(data)
	if err != nil {
		return shardFile{}, nil
	}
	return shardFile{data, at}, nil
}

// memoLock is the lock held while memo shards are read back and written
// (see onDisk), across processes, by one save of many shards at a time:
// a lock per shard would be an open, two flocks and a close more for
// each. Within a process saves already wait on saveMu, taken first.
const memoLock = "memo"

// lockMemo takes memoLock and gives what releases it. Where the lock
// cannot be taken (a cache on NFS without lock support, a lock file that
// is not one) the memo is saved without it, as it was before saves took
// it: merged with what its files hold, though a build saving at the same
// moment may lose the other's facts. Failing the save lost them all, on
// every build: the memo only spares hashing.
func (c *Cache) lockMemo() func() {
	unlock, err := c.Lock(memoLock)
	if err != nil {
		return func() {}
	}
	return unlock
}

// keepUnread says, once per build, that a shard was left as it was
// because its file could not be read (see onDisk). Called with
// c.saveMu held.
func (c *Cache) keepUnread(err error) {
	if c.unreadSaid {
		return
	}
	c.unreadSaid = true
	c.warn("cache: digest memo: %v; the shard is left as it is, and this build's digests of the files in it are not remembered", err)
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
		// Facts are of a file's content: what is not a regular file has
		// none, and opening a named pipe to read waits for a writer.
		if err := bounded.RegularInfo(path, info); err != nil {
			return "", err
		}
		st = tree.StampOf(info)
	}
	if v, ok := c.recall(path, fact, st); ok {
		return v, nil
	}
	if v, ok := c.youngFact(path, fact, st); ok {
		return v, nil
	}
	if fact == "sha256" {
		// Written, or read in full, by this build: see Learn.
		if sum, ok := c.learned(st); ok {
			return c.store(path, fact, sum, st, false), nil
		}
	}
	v, err := derive(path)
	if err != nil {
		return "", err
	}
	// Only a file that had settled before it was read, and is the same
	// after, is known to have had this content all along. The copy the
	// memo keeps is returned, so that a caller keeping the value (a
	// layer's expected digests) does not keep a second one; a digest is
	// marked as this build's (Checked) in the memo's entry rather than
	// learned by file identity as well, which for 100,000 files was
	// 10 MB more.
	if st.Settled(time.Now(), settleTime) {
		if after, err := os.Stat(path); err == nil && tree.StampOf(after) == st {
			return c.store(path, fact, v, st, fact == "sha256"), nil
		}
		return v, nil
	}
	// A young file may yet change without its stamp changing: the fact
	// is not remembered past this build, nor is a digest Checked (the
	// layer writer hashes the file again as it copies it, against the
	// digest its key was made of). Within this build the same fact is
	// asked for again (a layer's key, then the record: a freshly built
	// binary was hashed twice), and is taken from here while the stamp
	// holds and the file is still young: once settled, it is read again,
	// so that the fact can be remembered and the digest Checked.
	c.keepYoung(path, fact, st, v)
	return v, nil
}

type youngKey struct{ path, fact string }

type youngFact struct {
	st tree.Stamp
	v  string
}

func (c *Cache) keepYoung(path, fact string, st tree.Stamp, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.young == nil {
		c.young = map[youngKey]youngFact{}
	}
	c.young[youngKey{path, fact}] = youngFact{st, v}
}

func (c *Cache) youngFact(path, fact string, st tree.Stamp) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.young[youngKey{path, fact}]
	return f.v, ok && f.st == st && !st.Settled(time.Now(), settleTime)
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
	c.store(path, "sha256", sum, st, false)
	return nil
}

// Forget drops every fact the memo holds of the file at path. A file
// whose content is not the digest remembered for its stamp can only mean
// a damaged memo (a rewrite changes the stamp): kept, it would fail every
// build that reads the file; dropped, the next build hashes it again.
func (c *Cache) Forget(path string) {
	info, statErr := os.Lstat(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shard(path)
	// An entry without facts is what prune drops when the shard is saved;
	// it hides the one read from disk until then.
	s.entries[path] = &memoEntry{}
	s.dirty = true
	delete(c.young, youngKey{path, "sha256"})
	if statErr == nil {
		st := tree.StampOf(info)
		delete(c.learnedDigests, fileID{st.Dev, st.Ino})
	}
}

// learnFact is Learn for another fact than the sha256, one this build
// derived as it wrote the file (a layer blob's diff ID).
func (c *Cache) learnFact(path, fact, v string) error {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return err
	}
	c.store(path, fact, v, tree.StampOf(info), false)
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

// Checked gives the sha256 this build computed of the file at path whose
// status is info, if it did (by writing it, or by reading it once it had
// settled): the layer writer takes it instead of hashing the file again,
// as long as the file keeps that status while it is copied. After Flush
// it knows only the files this build wrote.
func (c *Cache) Checked(path string, info fs.FileInfo) (string, bool) {
	st := tree.StampOf(info)
	if sum, ok := c.learned(st); ok {
		return sum, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.shards[c.shardOf(path)]
	if !ok {
		return "", false
	}
	m, ok := s.entries[path]
	if !ok || !m.checked || m.st != st {
		return "", false
	}
	return m.get("sha256")
}

func (c *Cache) learn(st tree.Stamp, sum string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.learnLocked(st, sum)
}

// learnLocked is learn with c.mu held.
func (c *Cache) learnLocked(st tree.Stamp, sum string) {
	if st.Ino == 0 {
		return // no file identity on this system
	}
	l := learnedDigest{size: st.Size, mtime: st.ModTime, ctime: st.CTime}
	if !isSHA256Hex(sum) {
		return // not a sha256: not learned, which costs only reading the file
	}
	hex.Decode(l.sum[:], []byte(sum))
	c.learnedDigests[fileID{st.Dev, st.Ino}] = l
}

// learnChecked learns the sha256 of m's file, if this build derived it
// (Checked), before m is let go of: the file is then not read again this
// build. Called with c.mu held.
func (c *Cache) learnChecked(m *memoEntry) {
	if sum, ok := m.get("sha256"); ok && m.checked {
		c.learnLocked(m.st, sum)
	}
}

// Learned gives the sha256 this build wrote the file whose stamp is st
// with, if it did (see Learn and Wrote).
func (c *Cache) Learned(st tree.Stamp) (string, bool) { return c.learned(st) }

func (c *Cache) learned(st tree.Stamp) (string, bool) {
	if st.Ino == 0 {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.learnedDigests[fileID{st.Dev, st.Ino}]
	if !ok || !l.is(st) {
		return "", false
	}
	return hex.EncodeToString(l.sum[:]), true
}

func (c *Cache) recall(path, fact string, st tree.Stamp) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shard(path)
	if m, ok := s.entries[path]; ok {
		if m.st != st {
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
	i, m, ok := s.find(path)
	if !ok || m.st != st {
		return "", false
	}
	v, known := m.get(fact)
	if !known {
		return "", false
	}
	// Marked used, not copied out: all gives it today's date if the
	// shard is written, which it must be if the date was another.
	s.used[i/64] |= 1 << (i % 64)
	if m.seen != today() {
		s.dirty = true
	}
	return v, true
}

// store remembers fact v of the file at path, whose stamp is st, and
// gives the memo's copy of v; checked marks a sha256 this build derived
// (see Checked).
func (c *Cache) store(path, fact, v string, st tree.Stamp, checked bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shard(path)
	m, ok := s.entries[path]
	if !ok {
		// Copied out only when kept: the address of what find gives
		// put every lookup's entry on the heap, 80 bytes of garbage
		// for each file a cold build stores.
		if _, read, found := s.find(path); found && read.st == st {
			m, ok = new(memoEntry), true
			*m = read
			s.entries[path] = m
		}
	}
	if !ok || m.st != st {
		m = &memoEntry{st: st}
		s.entries[path] = m
	}
	m.checked = m.checked || checked
	if old, ok := m.get(fact); ok && old == v && m.used && m.seen == today() {
		return old
	}
	m.set(fact, v)
	m.seen = today()
	m.used = true
	s.dirty = true
	v, _ = m.get(fact)
	c.evict(s)
	return v
}

// evict keeps a shard's entries within what saving it keeps: of the
// entries this build used, prune keeps the share with the last paths,
// so the others are dropped now rather than at the end of the build. A
// build of a million files held a memo entry for each (some 200 MB),
// of which a shard saves its share of the limit (400,000 in all). A
// sha256 this build derived (Checked) is kept as it learns the digests
// of files it wrote, by file identity, so that the file is not read
// again this build; other facts are derived again if asked for. Called
// with c.mu held.
func (c *Cache) evict(s *memoShard) {
	share := c.memoShare()
	if s.evictAt == 0 {
		s.evictAt = share + share/4 + 1
	}
	if len(s.entries) < s.evictAt {
		return
	}
	// Entries a build made unused (Forget's, a test's) are left to prune.
	// So is one hiding an entry read from disk of the same stamp: dropped,
	// it would let lookups find that entry again, which Forget may have
	// found wrong. Such entries are at most the shard as read.
	var paths []string
	for p, m := range s.entries {
		if !m.used {
			continue
		}
		if _, read, ok := s.find(p); ok && read.st == m.st {
			continue
		}
		paths = append(paths, p)
	}
	if len(paths) > share {
		slices.Sort(paths)
		for _, p := range paths[:len(paths)-share] {
			c.learnChecked(s.entries[p])
			delete(s.entries, p)
		}
	}
	s.evictAt = len(s.entries) + share/4 + 1
}

// Close saves the shards of the digest memo this build changed, pruned:
// see prune.
func (c *Cache) Close() error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.save()
}

// SaveNew writes now, rather than at Close or Flush, the shards this
// build made from nothing (no shard file was there to read) and changed,
// as save would write them, without holding the cache's lock while it
// writes: lookups go on meanwhile. A cold build's inputs fill most of the
// 256 shards, each a file created and renamed into place, one after
// another; saved at the end they were the build's last 30-250 ms (bench,
// Windows workload, 2 cores), saved once the inputs are hashed they
// overlap the layers' compression. A shard changed again after is saved
// again by Close or Flush, after this write. Shards read from disk are
// left to those: saved here, their entries used later in the build would
// make them dirty again. A shard that cannot be written is left dirty.
func (c *Cache) SaveNew() {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	// One shard encoded at a time: a cold build of 200,000 files held
	// every shard's encoding at once, 45 MB, while its layers were written.
	isNew := func(s *memoShard) bool {
		return s != nil && s.dirty && s.data == "" && len(s.at) == 0 && len(s.entries) > 0
	}
	c.mu.Lock()
	share := c.memoShare()
	var todo []int
	for i, s := range c.shards {
		if isNew(s) {
			todo = append(todo, i)
		}
	}
	c.mu.Unlock()
	slices.Sort(todo)
	var dirErr error
	made := false
	// One buffer for every shard: each is written before the next is
	// encoded, and a cold build's 256 were 40 MB of garbage while the
	// layers' keys were made.
	var buf []byte
	unlock := func() {}
	defer func() { unlock() }()
	for _, i := range todo {
		c.mu.Lock()
		s := c.shards[i]
		if !isNew(s) {
			c.mu.Unlock()
			continue
		}
		known := s.file
		c.mu.Unlock()
		if !made {
			dirErr, made = os.MkdirAll(c.memoDir(), 0o755), true
			if dirErr == nil {
				unlock = c.lockMemo()
			}
		}
		if dirErr != nil {
			continue // left dirty, for Close to say why
		}
		// Read back without c.mu, as a shard is read at lookup.
		disk, err := c.onDisk(i, known)
		if err != nil {
			c.keepUnread(err)
			continue
		}
		c.mu.Lock()
		// Only a save clears dirty, and saves wait on saveMu: s is
		// still in place and new, with what lookups added meanwhile.
		// It takes what it is saved with, what another build saved
		// there included, so that it holds all its file will: a later
		// save need not read the file back (see below).
		s.entries = s.written(share, disk).entries
		data := appendShard(buf[:0], s.entries)
		buf = data
		s.dirty, s.saving = false, true
		c.mu.Unlock()
		st, err := c.writeShard(i, data)
		c.mu.Lock()
		s.saving = false
		if err != nil {
			s.dirty = true
		} else {
			s.file = st
			if c.releasing {
				c.releaseLocked(i, s)
			}
		}
		c.mu.Unlock()
	}
}

// keepChecked is the size from which a file's digest this build derived
// outlives its memo entry once Release lets go of it (learned by the
// file's identity, see Checked): the layer writer copies a smaller file
// without it, hashing it as it copies, which costs less than opening
// and reading the file, which it does anyway. A tree of 100,000 small
// files saves the entries' 14 MB while its layer is written; one of big
// files keeps the digests that spare reading them twice.
const keepChecked = 64 << 10

// Release lets go of the memo shards SaveNew wrote, and from now on of
// each it writes, saving those it has not yet: for a build that has made
// every layer's key, which holds each file's digest, so that only
// Checked asks about most files again. A lookup of one of their files
// reads its shard back. Shards read from disk, or changed since they
// were saved, are kept; one SaveNew is writing is let go of once its
// file is in place.
func (c *Cache) Release() {
	c.mu.Lock()
	c.releasing = true
	for i, s := range c.shards {
		c.releaseLocked(i, s)
	}
	c.mu.Unlock()
	c.SaveNew()
}

// releaseLocked lets go of shard i, s, if SaveNew wrote it and it has
// not changed since. Called with c.mu held.
func (c *Cache) releaseLocked(i int, s *memoShard) {
	if s.dirty || s.saving || s.data != "" || len(s.at) > 0 || c.shards[i] != s {
		return
	}
	for _, m := range s.entries {
		if m.st.Size >= keepChecked {
			c.learnChecked(m)
		}
	}
	delete(c.shards, i)
}

// written is s as the memo's file holds it once saved over disk, what
// the file holds now (see onDisk): its entries and disk's, whole as a
// map, pruned to share. Of a path in both, the entry of the newer stamp
// is kept (a ctime never goes back), and of one stamp the facts of both,
// s's first; a path Forget dropped stays dropped. Called with the
// cache's lock held: an entry of s may take disk's facts.
func (s *memoShard) written(share int, disk shardFile) memoShard {
	w := memoShard{entries: s.all()}
	eachEntry(disk.data, disk.at, func(_ int, p string, d memoEntry) {
		m, ok := w.entries[p]
		switch {
		case !ok:
			w.entries[p] = &d
		case m.encoded() == "" || m.encoded() == noFacts:
			// Forgotten: the memo was found wrong about the file, which
			// the other build's copy may be too.
		case m.st == d.st:
			// Mostly the same facts: this build's own save read back
			// (SaveNew's, saved again at Close).
			if d.facts != m.facts {
				for _, f := range d.all() {
					if _, ok := m.get(f.name); !ok {
						m.set(f.name, f.value)
					}
				}
			}
			m.seen = max(m.seen, d.seen)
		case newer(d.st, m.st):
			w.entries[p] = &d
		}
	})
	w.prune(share)
	return w
}

// newer says whether a file of stamp a was changed after one of stamp b.
func newer(a, b tree.Stamp) bool {
	if a.CTime != b.CTime {
		return a.CTime > b.CTime
	}
	return a.ModTime > b.ModTime
}

// writeShard puts data in the place of shard i's file, and gives the
// stamp of the file it put there (zero if it cannot tell), by which a
// later save of the shard knows whether another build has saved it since
// (see onDisk): what it wrote, the shard holds, and reading it back was
// the cost of a read of every shard SaveNew wrote and the build changed
// again. Called under the memo's file lock, which other builds take to
// save: the file stat'd is the one renamed into place. (Where the lock
// cannot be taken, another build's save in that moment may be taken for
// this one's, and its facts lost, as merges without the lock may lose
// them anyway: the memo only spares hashing.)
func (c *Cache) writeShard(i int, data []byte) (tree.Stamp, error) {
	if shardWriteHook != nil {
		shardWriteHook(i)
	}
	shard := c.shardPath(i)
	if err := c.replace(shard, func() error { return tempfile.WriteFile(shard, data) }); err != nil {
		return tree.Stamp{}, err
	}
	info, err := os.Lstat(shard)
	if err != nil || !info.Mode().IsRegular() || info.Size() != int64(len(data)) {
		return tree.Stamp{}, nil
	}
	return tree.StampOf(info), nil
}

// memoShare is how many entries one shard keeps at most.
func (c *Cache) memoShare() int {
	n := c.memoShards
	if n <= 0 {
		n = memoShards
	}
	limit := c.MemoLimit
	if limit <= 0 {
		limit = DefaultMemoLimit
	}
	return (limit + n - 1) / n
}

// Flush saves the memo as Close does and lets go of the shards read, for
// a build whose remaining steps look up few files: those are read again
// as they are looked up. The digests of files the build wrote (Learned)
// are kept; of those it read, only the memo on disk remembers them, so
// Checked no longer gives them.
func (c *Cache) Flush() error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
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
	defer c.lockMemo()()
	share := c.memoShare()
	var buf []byte
	for _, i := range dirty {
		s := c.shards[i]
		disk, err := c.onDisk(i, s.file)
		if err != nil {
			c.keepUnread(err)
			continue
		}
		// Written, the shard is held whole as a map, as few builds look
		// files up after they save the memo.
		*s = s.written(share, disk)
		buf = appendShard(buf[:0], s.entries)
		st, err := c.writeShard(i, buf)
		if err != nil {
			s.dirty = true
			return fmt.Errorf("cache %s: digest memo: %w", c.dir, err)
		}
		s.file = st
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
		if m.seen < old || m.encoded() == "" || m.encoded() == noFacts {
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

// appendShard appends to b the shard of entries, sorted by path, so that
// equal memos are equal files: per entry the path (after what it shares
// with the one before, but for every memoRestart-th), the stamp, the day
// last seen and the facts, lengths and numbers as varints. A caller that
// writes the shards one after another encodes each into the buffer of
// the one before.
func appendShard(b []byte, entries map[string]*memoEntry) []byte {
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	// Sized for the paths whole and every number at its longest: grown
	// by appending, the shards a cold build of 100,000 files saves cost
	// 60 MB of copies for 12 MB written.
	n := len(memoMagic)
	for p, m := range entries {
		n += len(p) + 8*binary.MaxVarintLen64 + len(m.facts) + len(m.extra)
	}
	b = append(slices.Grow(b, n), memoMagic...)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	prev := ""
	for i, p := range paths {
		m := entries[p]
		// Each path but every memoRestart-th is the length of what it
		// shares with the one before, and the rest: sorted paths share
		// most of theirs (a cache entry's directory), and whole they
		// were half of a shard, read into memory by every no-op build.
		shared := 0
		if i%memoRestart != 0 {
			for shared < min(len(p), len(prev)) && p[shared] == prev[shared] {
				shared++
			}
		}
		b = binary.AppendUvarint(b, uint64(shared))
		str(p[shared:])
		prev = p
		b = binary.AppendVarint(b, m.st.Size)
		b = binary.AppendVarint(b, m.st.ModTime)
		b = binary.AppendVarint(b, m.st.CTime)
		b = binary.AppendUvarint(b, m.st.Ino)
		b = binary.AppendUvarint(b, m.st.Dev)
		b = binary.AppendVarint(b, int64(m.seen))
		facts := m.encoded()
		if facts == "" {
			facts = noFacts
		}
		b = append(b, facts...)
	}
	return b
}

var errShard = errors.New("damaged memo shard")

// decodeShard reads a whole shard into a map.
func decodeShard(data []byte) (map[string]*memoEntry, error) {
	whole, at, err := indexShard(string(data))
	if err != nil {
		return nil, err
	}
	out := make(map[string]*memoEntry, len(at))
	eachEntry(whole, at, func(_ int, p string, m memoEntry) { out[p] = &m })
	return out, nil
}

// indexShard checks a shard as appendShard writes it, paths in order,
// and gives the offset of each entry in it: the paths and facts of the
// entries looked up are slices of whole.
func indexShard(whole string) (string, []uint32, error) {
	if !strings.HasPrefix(whole, memoMagic) || len(whole) > math.MaxUint32 {
		return "", nil, errShard
	}
	r := shardReader{s: whole, n: len(memoMagic), ok: true}
	var at []uint32
	var last []byte
	for r.n < len(whole) && r.ok {
		off := r.n
		shared, suffix := r.key()
		if !r.ok {
			break
		}
		// Every memoRestart-th path is whole, and each comes after the
		// one before: what it does not share with it sorts later.
		if len(at)%memoRestart == 0 && shared != 0 || shared > len(last) || len(at) > 0 && string(last[shared:]) >= suffix {
			return "", nil, errShard // not written by appendShard
		}
		last = append(last[:shared], suffix...)
		r.varint()  // size
		r.varint()  // mtime
		r.varint()  // ctime
		r.uvarint() // inode
		r.uvarint() // device
		r.varint()  // day seen
		if !r.ok {
			break
		}
		var buf [4]fact
		_, n, ok := decodeFacts(buf[:0], whole[r.n:])
		if !ok {
			return "", nil, errShard
		}
		r.n += n
		at = append(at, uint32(off))
	}
	if !r.ok {
		return "", nil, errShard
	}
	return whole, at, nil
}

// keyAt is how much of the path before it the path of the entry at off
// shares, and the rest, in a shard indexShard checked.
func keyAt(data string, off uint32) (int, string) {
	r := shardReader{s: data, n: int(off), ok: true}
	return r.key()
}

// entryAt decodes the entry at off in a shard indexShard checked, but
// for its path.
func entryAt(data string, off uint32) memoEntry {
	r := shardReader{s: data, n: int(off), ok: true}
	r.key()
	var m memoEntry
	m.st.Size, m.st.ModTime, m.st.CTime = r.varint(), r.varint(), r.varint()
	m.st.Ino, m.st.Dev = r.uvarint(), r.uvarint()
	m.seen = int32(r.varint())
	var buf [4]fact
	_, n, _ := decodeFacts(buf[:0], data[r.n:])
	m.facts = data[r.n : r.n+n]
	return m
}

// eachEntry calls f with each entry of a shard indexShard checked, in
// order, and its path whole.
func eachEntry(data string, at []uint32, f func(i int, path string, m memoEntry)) {
	var path []byte
	for i, off := range at {
		shared, suffix := keyAt(data, off)
		path = append(path[:shared], suffix...)
		f(i, string(path), entryAt(data, off))
	}
}

// shardReader reads the varints and strings of a shard in a string,
// as encoding/binary reads them from bytes; ok turns false at the
// first that is cut short or too long.
type shardReader struct {
	s  string
	n  int
	ok bool
}

func (r *shardReader) uvarint() uint64 {
	var x uint64
	for i, shift := 0, uint(0); i < binary.MaxVarintLen64 && r.n < len(r.s); i, shift = i+1, shift+7 {
		b := r.s[r.n]
		r.n++
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break // overflows 64 bits
			}
			return x | uint64(b)<<shift
		}
		x |= uint64(b&0x7f) << shift
	}
	r.ok = false
	return 0
}

func (r *shardReader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// key reads a path as appendShard writes it: the length of what it
// shares with the path before, and the rest.
func (r *shardReader) key() (int, string) {
	shared := r.uvarint()
	suffix := r.str()
	if shared > math.MaxUint32 {
		r.ok = false
	}
	return int(shared), suffix
}

func (r *shardReader) str() string {
	n := r.uvarint()
	if !r.ok || n > uint64(len(r.s)-r.n) {
		r.ok = false
		return ""
	}
	r.n += int(n)
	return r.s[r.n-int(n) : r.n]
}
