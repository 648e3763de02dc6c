package cache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	palletfixture "github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/tree"
)

// BenchmarkDigestFromMemo takes the digest of the tree at
// $PALLET_MEMO_BENCH (bench/workload gen files DIR 100000 makes one), or
// of 2,000 small files made here, from a memo that knows every file: a
// no-op build's lookups, each shard read from its file (Flush lets go of
// them between runs) by the digest workers.
func BenchmarkDigestFromMemo(b *testing.B) {
	t := memoBenchTree(b)
	cacheDir := filepath.Join(b.TempDir(), "cache")
	c, err := Open(cacheDir)
	if err != nil {
		b.Fatal(err)
	}
	want := learnTree(b, c, t)
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	c, err = Open(cacheDir)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		got, err := tree.Digest(t, func(p string, st tree.Stamp) (string, error) {
			if !st.Known() {
				b.Fatalf("%s: no stamp", p)
			}
			// FileDigest but for hashing: every file is in the memo.
			return c.RememberAt(p, st, "sha256", func(string) (string, error) {
				return "", errors.New("not in the memo")
			})
		})
		if err != nil || got != want {
			b.Fatalf("digest %s (%v), want %s", got, err, want)
		}
		if err := c.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveFromMemo is BenchmarkDigestFromMemo's lookups followed by
// saving every shard they read, as the first no-op build of a day does
// (each entry used is saved with the day): what saving costs a build
// whose memo no other build changed meanwhile.
func BenchmarkSaveFromMemo(b *testing.B) {
	t := memoBenchTree(b)
	c, err := Open(filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	learnTree(b, c, t)
	if err := c.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tree.Digest(t, func(p string, st tree.Stamp) (string, error) {
			return c.RememberAt(p, st, "sha256", func(string) (string, error) {
				return "", errors.New("not in the memo")
			})
		}); err != nil {
			b.Fatal(err)
		}
		c.mu.Lock()
		for _, s := range c.shards {
			s.dirty = true
		}
		c.mu.Unlock()
		if err := c.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// memoBenchTree is the tree at $PALLET_MEMO_BENCH (bench/workload gen
// files DIR 100000 makes one), or of 2,000 small files made here.
func memoBenchTree(b *testing.B) *tree.Tree {
	b.Helper()
	dir := os.Getenv("PALLET_MEMO_BENCH")
	if dir == "" {
		dir = palletfixture.SmallFiles(b, 2000, 100)
	}
	t, err := tree.FromDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// learnTree hashes every file of t and has c learn it: the files are too
// young to be remembered otherwise. It gives t's digest.
func learnTree(b *testing.B, c *Cache, t *tree.Tree) string {
	b.Helper()
	sum, err := tree.Digest(t, func(p string, _ tree.Stamp) (string, error) {
		sum, err := HashFile(p)
		if err == nil {
			err = c.Learn(p, sum)
		}
		return sum, err
	})
	if err != nil {
		b.Fatal(err)
	}
	return sum
}
