package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Sources remembers, per registry, a repository that received each blob
// pallet pushed there, as docker's push does: a later push of the same
// blob to another repository of that registry asks the registry to mount
// it from there instead of uploading it again. A source is only a hint:
// the registry checks that the repository holds the blob and that the
// pusher may read it, and uploads as usual when either fails, so a stale
// or lost entry costs speed, never correctness.
type Sources struct{ c *Cache }

// Sources is the cache's memory of where pushed blobs went.
func (c *Cache) Sources() *Sources { return &Sources{c: c} }

const (
	// maxSources bounds one registry's file (about 100 bytes an entry);
	// the blobs pushed least recently are forgotten first.
	maxSources = 10000
	// maxSourcesFile is the largest file read back; pallet writes less.
	maxSourcesFile = 8 << 20
)

type sourcesFile struct {
	Registry string                  `json:"registry"`
	Blobs    map[string]sourcesEntry `json:"blobs"`
}

type sourcesEntry struct {
	Repository string `json:"repository"`
	Pushed     int64  `json:"pushed"` // Unix seconds
}

func (s *Sources) path(registry string) string {
	sum := sha256.Sum256([]byte(registry))
	return filepath.Join(s.c.dir, "sources", hex.EncodeToString(sum[:16])+".json")
}

// Lookup is what is known of registry: blob digest → repository (without
// the registry's name). A missing or unreadable file knows nothing.
func (s *Sources) Lookup(registry string) map[string]string {
	f, err := s.read(registry)
	if err != nil || len(f.Blobs) == 0 {
		return nil
	}
	out := make(map[string]string, len(f.Blobs))
	for d, e := range f.Blobs {
		out[d] = e.Repository
	}
	return out
}

func (s *Sources) read(registry string) (*sourcesFile, error) {
	b, err := bounded.ReadRegular(s.path(registry), maxSourcesFile)
	if err != nil {
		return nil, err
	}
	var sf sourcesFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, err
	}
	// The file is named by a digest of the registry's name; one that
	// names another registry is not this one's.
	if sf.Registry != registry {
		return nil, fs.ErrNotExist
	}
	return &sf, nil
}

// Remember records that each blob (digest → repository) is now in that
// repository of registry. Concurrent pushes to one registry take turns, so
// neither loses the other's entries.
func (s *Sources) Remember(registry string, blobs map[string]string) error {
	if len(blobs) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(s.c.dir, "sources"), 0o755); err != nil {
		return err
	}
	unlock, err := s.c.Lock("sources-" + filepath.Base(s.path(registry)))
	if err != nil {
		return err
	}
	defer unlock()
	sf, err := s.read(registry)
	if err != nil {
		// Whatever stood there (nothing, a damaged file) is replaced.
		sf = &sourcesFile{Registry: registry}
	}
	if sf.Blobs == nil {
		sf.Blobs = map[string]sourcesEntry{}
	}
	now := time.Now().Unix()
	for d, repo := range blobs {
		sf.Blobs[d] = sourcesEntry{Repository: repo, Pushed: now}
	}
	if len(sf.Blobs) > maxSources {
		forgetOldest(sf.Blobs, len(sf.Blobs)-maxSources)
	}
	b, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	return tempfile.WriteFile(s.path(registry), b)
}

// forgetOldest drops the n entries pushed longest ago (ties by digest, so
// that which ones go does not depend on map order).
func forgetOldest(m map[string]sourcesEntry, n int) {
	ds := make([]string, 0, len(m))
	for d := range m {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool {
		a, b := m[ds[i]], m[ds[j]]
		if a.Pushed != b.Pushed {
			return a.Pushed < b.Pushed
		}
		return ds[i] < ds[j]
	})
	for _, d := range ds[:n] {
		delete(m, d)
	}
}
