package artifact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that holds more than its size said when it was looked at (one
// that grew meanwhile; here /proc's, which says 0 bytes and reads more)
// is refused as over the limit, not copied cut short, which then failed
// as a hash mismatch of the toolchain.
func TestCopyBoundedSaysGrownOverLimit(t *testing.T) {
	const src = "/proc/self/status"
	info, err := os.Stat(src)
	if err != nil || !info.Mode().IsRegular() || info.Size() != 0 {
		t.Skipf("%s is not a regular file that says it is empty: %v, %v", src, info, err)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	err = copyBounded(src, dst, 16)
	if err == nil || !strings.Contains(err.Error(), src+" is over the 16 bytes") {
		t.Errorf("want %s refused as over 16 bytes, got %v", src, err)
	}
	// Within the limit, it is copied whole.
	if err := copyBounded(src, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(dst); err != nil || !strings.Contains(string(data), "Name:") {
		t.Errorf("copied %q, %v", data, err)
	}
}
