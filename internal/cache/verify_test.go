package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// settle waits until files written before it are old enough, by mtime
// and by ctime, for the memo to remember facts about them.
func settle() { time.Sleep(2*time.Second + 200*time.Millisecond) }

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func openCache(t *testing.T, dir string) (*Cache, *logLines) {
	t.Helper()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := &logLines{}
	c.Log = l.add
	return c, l
}

// logLines collects what a cache logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewriteInPlace overwrites the start of path with data without changing
// its size, inode or mtime: what the memo cannot see by those alone.
func rewriteInPlace(t *testing.T, path string, at int64, data []byte) {
	t.Helper()
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, at); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the rewrite changed size or mtime: %v %v -> %v %v", before.Size(), before.ModTime(), after.Size(), after.ModTime())
	}
}

// A file rewritten in place with the same size and its mtime restored
// gets its new digest, from this process's memo and from the one saved.
func TestMemoSeesRewriteWithMtimeRestored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, _ := openCache(t, filepath.Join(dir, "cache"))
	p := filepath.Join(dir, "input")
	writeFile(t, p, []byte("version one"))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	settle()
	if got, err := c.FileSHA256(p); err != nil || got != sha([]byte("version one")) {
		t.Fatalf("first digest %s, %v", got, err)
	}
	if !memoHas(c, p) {
		t.Fatal("the settled file was not remembered: the test proves nothing")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	rewriteInPlace(t, p, 0, []byte("VERSION"))
	want := sha([]byte("VERSION one"))
	if got, err := c.FileSHA256(p); err != nil || got != want {
		t.Errorf("after the rewrite, the memo gave %s (%v), want %s", got, err, want)
	}
	c2, _ := openCache(t, filepath.Join(dir, "cache"))
	defer c2.Close()
	if got, err := c2.FileSHA256(p); err != nil || got != want {
		t.Errorf("after the rewrite, the saved memo gave %s (%v), want %s", got, err, want)
	}
}

// gzipped compresses data.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// putLayer stores content, gzipped, as the layer for key.
func putLayer(t *testing.T, c *Cache, key string, content []byte) (LayerEntry, string) {
	t.Helper()
	blob := gzipped(t, content)
	tmp, _, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(tmp, "blob")
	writeFile(t, src, blob)
	e := LayerEntry{Digest: "sha256:" + sha(blob), DiffID: "sha256:" + sha(content), Size: int64(len(blob)), Compression: "gzip"}
	path, err := c.PutLayer(key, src, e)
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(tmp)
	return e, path
}

// A cached layer blob altered on disk (a byte flipped, its mtime put
// back) after the memo had its digest is found out when the layer is
// asked for: a miss, the blob dropped and the damage logged.
func TestDamagedLayerBlobIsAMiss(t *testing.T) {
	t.Parallel()
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	key := Key("layer", "damaged")
	_, blob := putLayer(t, c, key, bytes.Repeat([]byte("layer content "), 100))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(blob, old, old); err != nil {
		t.Fatal(err)
	}
	settle()
	if _, got, ok := c.Layer(key); !ok || got != blob {
		t.Fatalf("the whole layer was not found: %v %s", ok, got)
	}
	if _, err := c.FileSHA256(blob); err != nil {
		t.Fatal(err)
	}
	if !memoHas(c, blob) {
		t.Fatal("the blob's digest was not remembered: the test proves nothing")
	}

	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	rewriteInPlace(t, blob, int64(len(data)/2), []byte{data[len(data)/2] ^ 0xff})
	if _, got, ok := c.Layer(key); ok {
		t.Fatalf("the damaged blob %s was served", got)
	}
	if _, err := os.Stat(blob); err == nil {
		t.Error("the damaged blob is still in the cache")
	}
	if !strings.Contains(log.String(), "damaged") {
		t.Errorf("the damage was not reported; log:\n%s", log)
	}
	// The key can be filled again.
	_, blob = putLayer(t, c, key, bytes.Repeat([]byte("layer content "), 100))
	if _, got, ok := c.Layer(key); !ok || got != blob {
		t.Errorf("the rewritten layer was not found: %v %s", ok, got)
	}
}

// A layer entry whose file is garbage is a miss, not a layer with empty
// digests.
func TestDamagedLayerEntryIsAMiss(t *testing.T) {
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	key := Key("layer", "entry")
	putLayer(t, c, key, []byte("content"))
	entry := filepath.Join(c.Dir(), "layers", key+".json")
	for _, bad := range []string{`{"digest":"sha256:`, `{"digest":"sha256:00","diffID":"x","size":1}`} {
		writeFile(t, entry, []byte(bad))
		if e, _, ok := c.Layer(key); ok {
			t.Errorf("entry %q was taken as %+v", bad, e)
		}
	}
	if !strings.Contains(log.String(), "damaged") {
		t.Errorf("the damage was not reported; log:\n%s", log)
	}
}

// Entries for files that no longer exist are not written back.
func TestMemoPrunesGoneFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var files []string
	for _, n := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, n)
		writeFile(t, p, []byte(n))
		files = append(files, p)
	}
	settle()
	c, _ := openCache(t, filepath.Join(dir, "cache"))
	// One shard: gone files are pruned from the shards a build writes.
	c.memoShards = 1
	for _, p := range files[:2] {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	c, _ = openCache(t, filepath.Join(dir, "cache"))
	c.memoShards = 1
	for _, p := range files[1:] {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	saved := readMemo(t, filepath.Join(dir, "cache"))
	if _, ok := saved[files[0]]; ok {
		t.Error("the memo still holds a file that is gone")
	}
	for _, p := range files[1:] {
		if _, ok := saved[p]; !ok {
			t.Errorf("the memo lost %s", p)
		}
	}
}

// readMemo reads every shard of the memo saved in cacheDir.
func readMemo(t *testing.T, cacheDir string) map[string]*memoEntry {
	t.Helper()
	shards, err := os.ReadDir(filepath.Join(cacheDir, "memo"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]*memoEntry{}
	for _, sh := range shards {
		data, err := os.ReadFile(filepath.Join(cacheDir, "memo", sh.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeShard(data)
		if err != nil {
			t.Fatalf("shard %s: %v", sh.Name(), err)
		}
		maps.Copy(all, m)
	}
	return all
}

// memoHas says whether c's memo holds an entry for path.
func memoHas(c *Cache, path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.shard(path).entries[path]
	return ok
}

// Builds finding a damaged blob at once, some dropping it and some
// writing it again, never serve it damaged nor drop a whole one.
func TestConcurrentLayerRepair(t *testing.T) {
	c, _ := openCache(t, t.TempDir())
	defer c.Close()
	key := Key("layer", "repair")
	content := bytes.Repeat([]byte("repair me "), 1000)
	e, blob := putLayer(t, c, key, content)
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	rewriteInPlace(t, blob, 10, []byte{data[10] ^ 0xff})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, path, ok := c.Layer(key)
				if !ok {
					tmp, _, err := c.TempDir()
					if err != nil {
						errs <- err
						return
					}
					if err := os.WriteFile(filepath.Join(tmp, "blob"), data, 0o644); err != nil {
						errs <- err
						return
					}
					if _, err := c.PutLayer(key, filepath.Join(tmp, "blob"), e); err != nil {
						errs <- err
					}
					os.RemoveAll(tmp)
					continue
				}
				served, err := os.ReadFile(path)
				if err != nil {
					errs <- fmt.Errorf("a served blob is gone: %w", err)
					return
				}
				if "sha256:"+sha(served) != got.Digest {
					errs <- fmt.Errorf("a damaged blob was served")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, _, ok := c.Layer(key); !ok {
		t.Error("the layer was not repaired")
	}
}
