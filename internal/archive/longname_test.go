package archive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// An entry's name in a refusal is shown whole where it could be a path,
// and cut to its start and length where it is longer: archive/tar reads
// a name of up to 1 MiB, which the message of the path bound printed
// whole (600 kB of error for one entry).
func TestLongEntryNameShortInErrors(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("d/", 300<<10) + "x"
	src := filepath.Join(dir, "long.tar")
	if err := os.WriteFile(src, fixture.Tar([]fixture.File{{Name: long, Content: "x"}}), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	err := Extract(context.Background(), src, Tar, out, Options{})
	if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), `"d/d/d/`) || !strings.Contains(err.Error(), "(614401 bytes)") || !strings.Contains(err.Error(), "path has more than") {
		t.Errorf("got an error of %d bytes, want under 1000 naming the entry's start and length: %.300v", len(errString(err)), err)
	}
	// A name that could be a path is shown whole.
	name := strings.Repeat("n", 2000)
	if got := shownName(name); got != `"`+name+`"` {
		t.Errorf("shownName cut a %d-byte name: %.100s", len(name), got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
