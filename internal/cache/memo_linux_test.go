package cache

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pallet-dev/pallet/internal/tree"
)

// The memo compares the device as git's index does: the same path, inode
// number, size and times on another file system (a disk swapped under a
// mount point, a restored backup) is another file.
func TestMemoComparesDevice(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "input")
	writeFile(t, p, []byte("content"))
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	ctime := st.Ctim.Sec*1e9 + st.Ctim.Nsec
	bogus := sha([]byte("not the content"))
	for _, tc := range []struct {
		name string
		dev  uint64
		want string
	}{
		// The memo's own format, all fields matching: its fact is used
		// (what makes the other case a test of the device alone).
		{"same device", st.Dev, bogus},
		{"other device", st.Dev + 1, sha([]byte("content"))},
	} {
		cacheDir := t.TempDir()
		c, _ := openCache(t, cacheDir)
		stamp := tree.Stamp{Size: info.Size(), ModTime: info.ModTime().UnixNano(), CTime: ctime, Ino: st.Ino, Dev: tc.dev}
		memo := encodeShard(map[string]*memoEntry{p: {st: stamp, seen: today(), facts: encodeFacts(fact{"sha256", bogus})}})
		writeFile(t, c.shardPath(c.shardOf(p)), memo)
		if got, err := c.FileSHA256(p); err != nil || got != tc.want {
			t.Errorf("%s: digest %s (%v), want %s", tc.name, got, err, tc.want)
		}
		c.Close()
	}
}
