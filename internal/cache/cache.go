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
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Cache is a cache directory.
type Cache struct {
	dir string

	mu        sync.Mutex
	memo      map[string]statMemo // facts about files, by path
	memoDirty bool

	// remote is the registry cache to import from, if any.
	remote *remoteCache
	// usedArtifacts and usedLayers are the keys this build found or made:
	// what --cache-to exports.
	usedArtifacts, usedLayers map[string]bool

	// Log, if set, receives warnings about the registry cache.
	Log func(format string, args ...any)
}

// statMemo remembers facts derived from a file's content (its digest,
// what kind of executable it is) with the stat data that was true when
// they were derived; a changed file no longer matches.
type statMemo struct {
	Size    int64             `json:"size"`
	ModTime int64             `json:"mtime"`
	Ino     uint64            `json:"ino"`
	Facts   map[string]string `json:"facts"`
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
	for _, sub := range []string{"blobs/sha256", "artifacts", "layers", "tmp", "locks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("cache %s: %w", dir, err)
		}
	}
	c := &Cache{dir: dir, memo: map[string]statMemo{}, usedArtifacts: map[string]bool{}, usedLayers: map[string]bool{}}
	if data, err := os.ReadFile(c.memoPath()); err == nil {
		// A damaged memo only costs rehashing.
		_ = json.Unmarshal(data, &c.memo)
	}
	c.sweep()
	return c, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// sweep removes temporary entries left by builds that were killed. Only
// entries old enough not to belong to a build still running are removed.
func (c *Cache) sweep() {
	entries, _ := os.ReadDir(filepath.Join(c.dir, "tmp"))
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(c.dir, "tmp", e.Name()))
		}
	}
}

// TempDir makes a directory for building an entry; Commit moves it into place.
func (c *Cache) TempDir() (string, error) {
	return tempfile.Dir(filepath.Join(c.dir, "tmp"), "build-*")
}

// Lock serializes work on key across processes until the returned function
// is called.
func (c *Cache) Lock(key string) (func(), error) {
	l := flock.New(filepath.Join(c.dir, "locks", safe(key)+".lock"))
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
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Blob is where the blob with sha256 sum is kept (it may not exist).
func (c *Cache) Blob(sum string) string {
	return filepath.Join(c.dir, "blobs", "sha256", sum)
}

// PutBlob moves the file at src, whose sha256 the caller verified, into
// the cache as the blob sum.
func (c *Cache) PutBlob(sum, src string) (string, error) {
	dst := c.Blob(sum)
	if err := os.Rename(src, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// Artifact returns the directory of the built artifact key, if cached
// here or in the registry cache.
func (c *Cache) Artifact(key string) (string, bool) {
	dir, ok := c.localArtifact(key)
	if !ok {
		dir, ok = c.pullArtifact(key)
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
	trash, err := c.TempDir()
	if err != nil {
		return err
	}
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
// key. A "complete" marker written last says the entry is whole.
func (c *Cache) CommitArtifact(key, tmp string) (string, error) {
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
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

// LayerEntry describes a cached layer blob.
type LayerEntry struct {
	Digest      string `json:"digest"`
	DiffID      string `json:"diffID"`
	Size        int64  `json:"size"`
	Compression string `json:"compression"`
}

// Layer returns the cached layer for key and the path of its blob. The
// blob's size is checked here; its digest is checked whenever it is read.
func (c *Cache) Layer(key string) (LayerEntry, string, bool) {
	e, blob, ok := c.localLayer(key)
	if !ok && c.pullLayer(key) {
		e, blob, ok = c.localLayer(key)
	}
	if ok {
		c.use(c.usedLayers, key)
	}
	return e, blob, ok
}

func (c *Cache) localLayer(key string) (LayerEntry, string, bool) {
	var e LayerEntry
	data, err := os.ReadFile(filepath.Join(c.dir, "layers", key+".json"))
	if err != nil || json.Unmarshal(data, &e) != nil {
		return e, "", false
	}
	blob := c.Blob(strings.TrimPrefix(e.Digest, "sha256:"))
	info, err := os.Stat(blob)
	if err != nil || info.Size() != e.Size {
		return e, "", false
	}
	return e, blob, true
}

// PutLayer records that key's layer is the blob at src (moved into the
// cache) with the digests in e.
func (c *Cache) PutLayer(key, src string, e LayerEntry) (string, error) {
	blob := c.Blob(strings.TrimPrefix(e.Digest, "sha256:"))
	// Replace, never keep, what is there: a blob found damaged is rewritten
	// under the same name, atomically.
	if err := os.Rename(src, blob); err != nil {
		return "", err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	if err := tempfile.WriteFile(filepath.Join(c.dir, "layers", key+".json"), data); err != nil {
		return "", err
	}
	c.use(c.usedLayers, key)
	return blob, nil
}

// FileSHA256 returns the sha256 of the file at path, from memory when the
// file's size, mtime and inode are those it had when last hashed. This is
// what keeps a no-op rebuild from reading every input again.
func (c *Cache) FileSHA256(path string) (string, error) {
	return c.Remember(path, "sha256", HashFile)
}

// Remember returns derive(path), a fact about the file's content named
// fact, from memory while the file's size, mtime and inode are those it
// had when the fact was derived.
func (c *Cache) Remember(path, fact string, derive func(string) (string, error)) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	same := func(m statMemo) bool {
		return m.Size == info.Size() && m.ModTime == info.ModTime().UnixNano() && m.Ino == inode(info)
	}
	c.mu.Lock()
	m, ok := c.memo[path]
	v, known := m.Facts[fact]
	c.mu.Unlock()
	if ok && known && same(m) {
		return v, nil
	}
	v, err = derive(path)
	if err != nil {
		return "", err
	}
	// A file modified within the mtime granularity could change again
	// unseen; only remember facts about files that have settled.
	if time.Since(info.ModTime()) > 2*time.Second {
		c.mu.Lock()
		m, ok := c.memo[path]
		if !ok || !same(m) {
			m = statMemo{Size: info.Size(), ModTime: info.ModTime().UnixNano(), Ino: inode(info), Facts: map[string]string{}}
		}
		if m.Facts == nil {
			m.Facts = map[string]string{}
		}
		m.Facts[fact] = v
		c.memo[path] = m
		c.memoDirty = true
		c.mu.Unlock()
	}
	return v, nil
}

// HashFile returns the hex sha256 of the file at path.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (c *Cache) memoPath() string { return filepath.Join(c.dir, "digests.json") }

// Close saves the digest memo.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.memoDirty {
		return nil
	}
	data, err := json.Marshal(c.memo)
	if err != nil {
		return err
	}
	return tempfile.WriteFile(c.memoPath(), data)
}
