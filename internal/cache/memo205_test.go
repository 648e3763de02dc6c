package cache

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/pallet-dev/pallet/internal/tree"
)

// storeBytes is what storing a sha256 for each of n files allocates, in
// bytes, in a memo that knows none of them (a cold build's).
func storeBytes(t *testing.T, n int) uint64 {
	c, err := Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/src/node_modules/pkg%03d/lib/file%06d.js", i/300, i)
	}
	sum := strings.Repeat("ab", 32)
	old := time.Now().Add(-time.Hour).UnixNano()
	stamp := func(i int) tree.Stamp {
		return tree.Stamp{Size: 10, ModTime: old, CTime: old, Ino: uint64(i + 1), Dev: 1}
	}
	// Every shard read (there are none) before the count: a shard's
	// cost is not a file's.
	for i := range memoShards * 8 {
		c.store(fmt.Sprintf("/warm/%d", i), "sha256", sum, stamp(n+i), true)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, p := range paths {
		if v := c.store(p, "sha256", sum, stamp(i), true); v != sum {
			t.Fatalf("stored %q, got back %q", sum, v)
		}
	}
	runtime.ReadMemStats(&after)
	for i, p := range paths[:100] {
		if v, ok := c.recall(p, "sha256", stamp(i)); !ok || v != sum {
			t.Fatalf("%s: recalled %q, %v", p, v, ok)
		}
	}
	return after.TotalAlloc - before.TotalAlloc
}

// Storing a file's digest in the memo, as a cold build does for each
// of its files, allocates its entry, the facts' bytes and its share of
// the shard's map, and no garbage beside: of 100,000 files, the facts
// decoded into a slice and encoded into bytes at their longest before
// the string kept were 14 MB of garbage for the collector to chase
// while the tree and the memo are live.
func TestStoreBytesPerFile205(t *testing.T) {
	if race205 {
		t.Skip("the race detector allocates as it pleases")
	}
	const n = 5000
	small, big := storeBytes(t, n), storeBytes(t, 4*n)
	// What 3n files more cost, each: the constant costs cancel out.
	per := float64(big-small) / (3 * n)
	facts := len(encodeFacts(fact{"sha256", strings.Repeat("ab", 32)}))
	// The entry, the facts (to the next 16 bytes, as the allocator
	// rounds them) and a slot of the map (a string and a pointer, and
	// its control byte): twice over, as a map that doubles has
	// allocated as much again before, and 16/7 of them per entry, as a
	// table just doubled is 7/16 full.
	slot := float64(unsafe.Sizeof("")+unsafe.Sizeof(&memoEntry{})) + 1
	bound := float64(unsafe.Sizeof(memoEntry{})) + float64((facts+15)/16*16) + 2*slot*16/7
	t.Logf("%.1f bytes per file stored (small %d, big %d), at most %.1f", per, small, big, bound)
	if per > bound {
		t.Errorf("storing a digest allocated %.1f bytes per file, want at most %.1f: a %d-byte entry, %d bytes of facts and a map slot", per, bound, unsafe.Sizeof(memoEntry{}), facts)
	}
}
