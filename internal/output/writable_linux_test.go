package output

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// On Linux the check that a directory takes a new file names none there:
// a build killed between making a named probe and removing it left it
// where no build's sweep looks (beside --sbom-dir's documents, or in the
// nearest existing parent of an output not made yet). The directory is
// not touched, so its time stays.
func TestCheckWritableNamesNoFile(t *testing.T) {
	dir := t.TempDir()
	if done, _ := probeUnnamed(dir); !done {
		t.Skip("the file system makes no unnamed files (O_TMPFILE)")
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "sbom", "document"), filepath.Join(dir, "out.tar")} {
		if err := CheckWritable(p); err != nil {
			t.Fatalf("CheckWritable(%s): %v", p, err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) {
		t.Errorf("the check changed %s (its time %s, was %s): it named a file there", dir, fi.ModTime(), old)
	}
	// A directory it cannot write in is still said.
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if err := CheckWritable(filepath.Join(ro, "out")); err == nil {
			t.Errorf("CheckWritable in a read-only directory: no error")
		}
	}
}
