// Package cache is pallet's local content-addressed store: downloads by
// sha256, built artifacts by a key of their inputs, layers by the digest of
// their file tree and format. Entries are written under temporary names and
// renamed into place, so a build killed at any moment leaves either a
// whole entry or none; readers verify what they read. Work on one key is
// serialized across processes with file locks, so two builds sharing a
// cache directory never do the same work twice nor see it half done.
package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/regfile"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Cache is a cache directory.
type Cache struct {
	dir string

	mu sync.Mutex
	// saveMu is held while memo shards are written (save, SaveNew), so
	// that two writes of one shard land in the order they were made.
	// Taken before mu.
	saveMu sync.Mutex
	// shards are the parts of the digest memo (facts about files, by
	// path) this build has read, by number.
	shards map[int]*memoShard
	// loading are the shards being read (see shard), each closed once
	// its shard is in shards.
	loading map[int]chan struct{}
	// releasing says Release was called: SaveNew lets go of each shard
	// it writes.
	releasing bool
	// unreadSaid says a shard left unsaved as its file could not be
	// read was warned about (see keepUnread). Guarded by saveMu.
	unreadSaid bool
	// memoShards is how many shards the memo has (memoShards when zero).
	memoShards int
	// learnedDigests are the digests this build computed, by file: what
	// it wrote (Learn), and what it read once settled.
	learnedDigests map[fileID]learnedDigest
	// young are facts this build derived of files too young to be
	// remembered (see RememberAt), kept for this build only.
	young map[youngKey]youngFact

	// remote is the registry cache to import from, if any.
	remote *remoteCache
	// usedArtifacts and usedLayers are the keys this build found or made:
	// what --cache-to exports.
	usedArtifacts, usedLayers map[string]bool

	// Log, if set, receives warnings: entries found damaged and dropped,
	// registry cache entries refused.
	Log func(format string, args ...any)

	// Limits bound what is pulled from the registry cache (ImportFrom);
	// set before ImportFrom.
	Limits Limits

	// MemoLimit caps how many files the digest memo (memo/ in the cache
	// directory) remembers; zero means DefaultMemoLimit.
	MemoLimit int
}

func (c *Cache) warn(format string, args ...any) {
	if c.Log == nil {
		return
	}
	// A registry cache's errors may name a URL whole, with its secrets.
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = regauth.Redact(err)
		}
	}
	c.Log(format, args...)
}

// DefaultDir is the user's cache directory for pallet.
func DefaultDir() (string, error) {
	if d := os.Getenv("PALLET_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pallet"), nil
}

// Open opens (creating if needed) the cache at dir.
func Open(dir string) (*Cache, error) {
	if err := claim(dir); err != nil {
		return nil, err
	}
	if err := refuseLinkedDirs(dir); err != nil {
		return nil, err
	}
	for _, sub := range []string{"blobs/sha256", "artifacts", "layers", "tmp", "locks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("cache %s: %w", dir, err)
		}
	}
	c := &Cache{dir: dir, shards: map[int]*memoShard{}, learnedDigests: map[fileID]learnedDigest{},
		usedArtifacts: map[string]bool{}, usedLayers: map[string]bool{}}
	// The memo of earlier versions, one file read whole by every build.
	os.Remove(filepath.Join(dir, "digests.json"))
	c.sweep()
	return c, nil
}

// cacheDirs are the directories inside a cache, parents first.
var cacheDirs = []string{"artifacts", "blobs", "blobs/sha256", "facts", "layers", "locks", "memo", "sources", "tmp", "uptodate"}

// refuseLinkedDirs refuses a cache with a symlink where it keeps one of
// its directories (a cache restored from elsewhere, a CI cache an
// untrusted job wrote): followed, the sweep would remove what lies under
// another directory's build-* names, and the writes would land there.
// The link is not pallet's, so it is not removed either: the error names
// it. Anything else that is not a directory there is left to the
// directories' making: where the cache needs the directory, making it
// fails and says so; where it only saves work (memo/), the build warns
// and goes on without it.
func refuseLinkedDirs(dir string) error {
	for _, sub := range cacheDirs {
		fi, err := os.Lstat(filepath.Join(dir, sub))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("cache %s: %w", dir, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("cache %s: %s is a symlink, which pallet neither follows nor removes: make it a directory, or give the directory it leads to as the cache", dir, sub)
		}
	}
	return nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// sweep removes temporary entries left by builds that were killed, and
// only under the names pallet gives them. A directory whose lock is free
// goes at once: a build killed again and again (a CI job cancelled) would
// otherwise leave a layer half written each time, for a day. What has no
// lock (a fact, a directory of an earlier pallet) goes once old enough
// not to belong to a build still running.
func (c *Cache) sweep() {
	tmp := filepath.Join(c.dir, "tmp")
	tempfile.Sweep(tmp, "build-*", 24*time.Hour)
	tempfile.Sweep(tmp, "fact-*", 24*time.Hour)
	// A memo shard is written beside itself (.NN.new-*) and renamed in,
	// at the end of a build, where kills land, and the tag beside itself
	// as a new cache is claimed; nothing else took what a killed write
	// left, for a memo one file for each shard each time. Each is one
	// write: untouched for a minute, it is no running build's.
	tempfile.Sweep(c.memoDir(), ".*", oneWriteIdle)
	tempfile.Sweep(c.dir, tempfile.Beside(filepath.Join(c.dir, tagName)), oneWriteIdle)
}

// oneWriteIdle is how long a temporary written in one call (a memo
// shard, the tag) is left untouched before sweep takes it for a killed
// build's.
const oneWriteIdle = time.Minute

// TempDir makes a directory for building an entry; Commit moves it into
// place. It is locked until release, which the caller calls once the
// directory is moved or removed.
func (c *Cache) TempDir() (dir string, release func(), err error) {
	return tempfile.DirLocked(filepath.Join(c.dir, "tmp"), "build-*")
}

// Lock serializes work on key across processes until the returned function
// is called.
func (c *Cache) Lock(key string) (func(), error) {
	l, err := tempfile.NewLock(filepath.Join(c.dir, "locks", safe(key)+".lock"), os.O_CREATE|os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("cache lock %s: %w", key, err)
	}
	if err := l.Lock(); err != nil {
		return nil, fmt.Errorf("cache lock %s: %w", key, err)
	}
	return func() { l.Unlock() }, nil
}

func safe(key string) string {
	if len(key) <= 80 && !strings.ContainsAny(key, "/\\:") {
		return key
	}
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

// Key digests the parts of a cache key. Parts are length-prefixed so that
// no two different lists give the same key.
func Key(parts ...string) string {
	k := NewKeyer()
	for _, p := range parts {
		k.Add(p)
	}
	return k.Sum()
}

// Keyer makes the key Key makes of the parts added, one part at a time.
type Keyer struct {
	h   hash.Hash
	buf []byte
}

// NewKeyer starts a key.
func NewKeyer() *Keyer { return &Keyer{h: sha256.New()} }

// Add appends part to the key.
func (k *Keyer) Add(part string) { k.buf = appendPart(k.buf[:0], part); k.h.Write(k.buf) }

// AddBytes is Add for a part held as bytes, which it does not keep: a
// layer's key adds one part per file, and a string of each was 12 MB of
// garbage for 100,000 files.
func (k *Keyer) AddBytes(part []byte) { k.buf = appendPart(k.buf[:0], part); k.h.Write(k.buf) }

// appendPart appends part as a key holds it, what fmt's "%d:%s;" of its
// length and itself gives.
func appendPart[T string | []byte](b []byte, part T) []byte {
	b = strconv.AppendInt(b, int64(len(part)), 10)
	b = append(b, ':')
	b = append(b, part...)
	return append(b, ';')
}

// Sum is the key of the parts added.
func (k *Keyer) Sum() string { return hex.EncodeToString(k.h.Sum(nil)) }

// Blob is where the blob with sha256 sum is kept (it may not exist).
func (c *Cache) Blob(sum string) string {
	return filepath.Join(c.dir, "blobs", "sha256", sum)
}

// blobLock serializes replacing and dropping one blob, so that a damaged
// blob is never dropped after a whole one took its place.
func blobLock(sum string) string { return "blob-" + sum }

// PutBlob moves the file at src, whose sha256 the caller verified, into
// the cache as the blob sum, replacing what is there.
func (c *Cache) PutBlob(sum, src string) (string, error) {
	unlock, err := c.Lock(blobLock(sum))
	if err != nil {
		return "", err
	}
	defer unlock()
	dst := c.Blob(sum)
	if err := c.replace(dst, func() error { return os.Rename(src, dst) }); err != nil {
		return "", fmt.Errorf("cache: put blob sha256:%s: %w", sum, err)
	}
	return dst, nil
}

// replace runs put, which renames a file to dst, again after moving what
// is there out of the way when that is what stopped it: a rename does not
// replace a directory, and one where the cache keeps a file (made by hand,
// or by a damaged file system) would otherwise fail every build that
// writes it. dst is a name the cache owns.
func (c *Cache) replace(dst string, put func() error) error {
	err := put()
	if err == nil {
		return nil
	}
	if info, lerr := os.Lstat(dst); lerr != nil || !info.IsDir() {
		return err
	}
	c.warn("cache: %s is a directory where a file belongs; replaced", dst)
	if derr := c.discard(dst); derr != nil {
		return errors.Join(err, derr)
	}
	return put()
}

// VerifiedBlob returns the path of the blob sum if it is there and its
// content hashes to sum: from the memo while the file's stamp is the one
// it had when hashed, else by reading it. A damaged blob is reported,
// dropped and a miss.
func (c *Cache) VerifiedBlob(sum string) (string, bool) {
	if !isSHA256Hex(sum) {
		return "", false
	}
	path := c.Blob(sum)
	got, err := c.FileSHA256(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.warn("cache: blob sha256:%s cannot be read (%v); not used", sum, err)
		}
		return "", false
	}
	if got == sum {
		return path, true
	}
	return c.dropDamagedBlob(sum)
}

// dropDamagedBlob removes the blob sum, found damaged, unless a whole one
// has been put in its place since it was read.
func (c *Cache) dropDamagedBlob(sum string) (string, bool) {
	path := c.Blob(sum)
	unlock, err := c.Lock(blobLock(sum))
	if err != nil {
		c.warn("cache: blob sha256:%s is damaged and cannot be dropped: %v", sum, err)
		return "", false
	}
	defer unlock()
	got, err := c.FileSHA256(path)
	if err != nil {
		return "", false
	}
	if got == sum {
		return path, true
	}
	c.warn("cache: blob sha256:%s is damaged (its content hashes to %s); dropped", sum, got)
	if err := c.discard(path); err != nil {
		c.warn("cache: drop damaged blob %s: %v", path, err)
	}
	return "", false
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// Artifact returns the directory of the built artifact key, if cached
// here or in the registry cache. An entry pulled from the registry cache
// is checked for being whole and exported under key, not against the
// request: callers that can should use ArtifactChecked.
func (c *Cache) Artifact(key string) (string, bool) {
	return c.ArtifactChecked(key, nil)
}

// ArtifactChecked is Artifact, with check run on an entry pulled from the
// registry cache before it enters the local cache: dir is the entry as it
// would be committed (tree/, licenses/, record.json, digest), in a
// temporary place. An entry check refuses is a warning and a miss. Local
// entries are not passed to check: their content is verified by whoever
// reads them, and they were made for this key on this machine.
func (c *Cache) ArtifactChecked(key string, check func(dir string) error) (string, bool) {
	dir, ok := c.localArtifact(key)
	if !ok {
		dir, ok = c.pullArtifact(key, check)
	}
	if ok {
		c.use(c.usedArtifacts, key)
	}
	return dir, ok
}

func (c *Cache) localArtifact(key string) (string, bool) {
	dir := filepath.Join(c.dir, "artifacts", key)
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		return "", false
	}
	return dir, true
}

// DropArtifact removes the entry for key, found damaged. It is first
// moved out of artifacts/ in one rename, so that a process killed while
// deleting it leaves no half-deleted entry under the key.
func (c *Cache) DropArtifact(key string) error {
	return c.discard(filepath.Join(c.dir, "artifacts", key))
}

// discard renames path into tmp/ and deletes it there.
func (c *Cache) discard(path string) error {
	trash, release, err := c.TempDir()
	if err != nil {
		return err
	}
	defer release()
	if err := os.Rename(path, filepath.Join(trash, "discarded")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.Remove(trash)
		return err
	}
	return os.RemoveAll(trash)
}

func (c *Cache) use(set map[string]bool, key string) {
	c.mu.Lock()
	set[key] = true
	c.mu.Unlock()
}

// CommitArtifact moves tmp, a finished artifact directory, into place as
// key. A "complete" marker written last says the entry is whole; it holds
// the key, which travels with the entry when it is exported. A whole
// entry already under key is kept, and tmp discarded.
func (c *Cache) CommitArtifact(key, tmp string) (string, error) {
	if err := os.WriteFile(filepath.Join(tmp, "complete"), []byte(key), 0o644); err != nil {
		return "", err
	}
	dst := filepath.Join(c.dir, "artifacts", key)
	c.use(c.usedArtifacts, key)
	err := os.Rename(tmp, dst)
	if err == nil {
		return dst, nil
	}
	// Another build committed the same key first: theirs is as good.
	if _, ok := c.localArtifact(key); ok {
		os.RemoveAll(tmp)
		return dst, nil
	}
	// What is there has no marker: the remains of a killed build. It is
	// no entry; replace it. Another process may be doing the same: under a
	// lock, and looking again, so that one never discards the entry the
	// other has just committed.
	unlock, lerr := c.Lock("replace-" + key)
	if lerr != nil {
		return "", lerr
	}
	defer unlock()
	if _, ok := c.localArtifact(key); ok {
		os.RemoveAll(tmp)
		return dst, nil
	}
	if _, serr := os.Lstat(dst); serr == nil {
		if derr := c.discard(dst); derr != nil {
			return "", fmt.Errorf("cache: replace incomplete entry %s: %w", dst, derr)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		// A commit outside the lock got there in between: theirs is whole.
		if _, ok := c.localArtifact(key); ok {
			os.RemoveAll(tmp)
			return dst, nil
		}
		return "", err
	}
	return dst, nil
}

// maxLayerEntry bounds a layer entry read back: four short fields.
const maxLayerEntry = 64 << 10

// LayerEntry describes a cached layer blob.
type LayerEntry struct {
	Digest      string `json:"digest"`
	DiffID      string `json:"diffID"`
	Size        int64  `json:"size"`
	Compression string `json:"compression"`
}

// validate refuses an entry whose digests are not sha256 digests or whose
// size cannot be a blob's: what a damaged file parses as.
func (e LayerEntry) validate() error {
	for _, d := range []string{e.Digest, e.DiffID} {
		if !isSHA256Hex(strings.TrimPrefix(d, "sha256:")) || !strings.HasPrefix(d, "sha256:") {
			return fmt.Errorf("%q is no sha256 digest", d)
		}
	}
	if e.Size < 0 {
		return fmt.Errorf("size %d", e.Size)
	}
	return nil
}

func (e LayerEntry) hex() string { return strings.TrimPrefix(e.Digest, "sha256:") }

// layerFile is a layer entry as the cache keeps it, with the key it was
// written under: nothing else ties a whole entry to its file's name, and
// one moved or copied under another key (a cache merged or restored by
// hand) gave that key's build another layer, its blob whole.
type layerFile struct {
	LayerEntry
	Key string `json:"key"`
}

// DiffIDFact names the memo's fact of a layer blob's diff ID, as it
// decompresses with compression.
func DiffIDFact(compression string) string { return "diffid " + compression }

// layerEntryLock serializes writing the entry for key, so that an import
// never replaces an entry a build has just written.
func layerEntryLock(key string) string { return "layer-entry-" + key }

// Layer returns the cached layer for key and the path of its blob, which
// has been checked against the entry's digest (see VerifiedBlob) and size.
// A layer pulled from the registry cache is checked against its digest,
// size and diff ID, not against the request: callers that can should use
// LayerChecked.
func (c *Cache) Layer(key string) (LayerEntry, string, bool) {
	return c.LayerChecked(key, nil)
}

// LayerChecked is Layer, with check run on a layer pulled from the
// registry cache before it enters the local cache: e is its entry, and
// blob its verified blob in a temporary place. A layer check refuses is a
// warning and a miss.
func (c *Cache) LayerChecked(key string, check func(e LayerEntry, blob string) error) (LayerEntry, string, bool) {
	e, blob, ok := c.localLayer(key)
	if !ok && c.pullLayer(key, check) {
		e, blob, ok = c.localLayer(key)
	}
	if ok {
		c.use(c.usedLayers, key)
	}
	return e, blob, ok
}

// localLayer is the local entry for key, if it is whole. A damaged blob
// is dropped (VerifiedBlob); a damaged entry file is left for the next
// PutLayer of the key to replace.
func (c *Cache) localLayer(key string) (LayerEntry, string, bool) {
	var f layerFile
	path := filepath.Join(c.dir, "layers", key+".json")
	data, err := bounded.ReadRegular(path, maxLayerEntry)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.warn("cache: layer entry %s cannot be read (%v); not used", path, err)
		}
		return f.LayerEntry, "", false
	}
	if err := json.Unmarshal(data, &f); err != nil {
		c.warn("cache: layer entry %s is damaged (%v); not used", path, err)
		return f.LayerEntry, "", false
	}
	e := f.LayerEntry
	switch {
	case f.Key == "":
		// Written before entries named their keys: rewritten once, as
		// nothing says whose it is.
		return e, "", false
	case f.Key != key:
		c.warn("cache: layer entry %s was written for key %q; not used", path, f.Key)
		return e, "", false
	}
	if err := e.validate(); err != nil {
		c.warn("cache: layer entry %s is damaged (%v); not used", path, err)
		return e, "", false
	}
	blob, ok := c.VerifiedBlob(e.hex())
	if !ok {
		return e, "", false
	}
	if info, err := os.Stat(blob); err != nil || info.Size() != e.Size {
		c.warn("cache: layer entry %s does not match its blob's size; not used", path)
		return e, "", false
	}
	return e, blob, true
}

// PutLayer records that key's layer is the blob at src (moved into the
// cache) with the digests in e, which the caller verified.
func (c *Cache) PutLayer(key, src string, e LayerEntry) (string, error) {
	unlock, err := c.Lock(layerEntryLock(key))
	if err != nil {
		return "", err
	}
	defer unlock()
	return c.putLayer(key, src, e)
}

// putLayer is PutLayer, with the entry's lock held.
func (c *Cache) putLayer(key, src string, e LayerEntry) (string, error) {
	if err := e.validate(); err != nil {
		return "", fmt.Errorf("cache: layer entry %s: %w", key, err)
	}
	// Replace, never keep, what is there: a blob found damaged is rewritten
	// under the same name, atomically.
	blob, err := c.PutBlob(e.hex(), src)
	if err != nil {
		return "", err
	}
	// The diff ID was verified by the caller (written, or decompressed
	// from a pull): readers of the entry check it against the memo's
	// fact, without decompressing the blob again.
	if err := c.learnFact(blob, DiffIDFact(e.Compression), e.DiffID); err != nil {
		return "", err
	}
	data, err := json.Marshal(layerFile{e, key})
	if err != nil {
		return "", err
	}
	entry := filepath.Join(c.dir, "layers", key+".json")
	if err := c.replace(entry, func() error { return tempfile.WriteFile(entry, data) }); err != nil {
		return "", err
	}
	c.use(c.usedLayers, key)
	return blob, nil
}

// importLayer is putLayer for a layer pulled from the registry cache: a
// whole local entry made since the lookup missed is kept.
func (c *Cache) importLayer(key, src string, e LayerEntry) error {
	unlock, err := c.Lock(layerEntryLock(key))
	if err != nil {
		return err
	}
	defer unlock()
	if _, _, ok := c.localLayer(key); ok {
		return nil
	}
	_, err = c.putLayer(key, src, e)
	return err
}

// hashers are HashFile's read buffers and hashes: io.Copy from a file
// allocates one per call (os.File's WriteTo), 32 KiB for each of
// 100,000 files, and a hash each was 13 MB more for the collector.
var hashers = sync.Pool{New: func() any { return &hasher{buf: make([]byte, 64<<10), h: sha256.New()} }}

type hasher struct {
	buf []byte
	h   hash.Hash
}

// HashFile returns the hex sha256 of the file at path.
func HashFile(path string) (string, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hr := hashers.Get().(*hasher)
	defer hashers.Put(hr)
	hr.h.Reset()
	// The file's WriteTo hidden, so that the pool's buffer is used.
	if _, err := io.CopyBuffer(hr.h, struct{ io.Reader }{f}, hr.buf); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(hr.h.Sum(sum[:0])), nil
}
