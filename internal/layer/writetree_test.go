package layer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// A tree's tar is the same walked (writeTree, what Build does) as from
// its entries (WriteTar), in every format, parents synthesized included.
func TestWriteTreeIsWriteTar(t *testing.T) {
	dir := t.TempDir()
	tr := tree.New()
	for i, name := range []string{"a/b/c.txt", "a/b-c", "a/z", "top"} {
		src := filepath.Join(dir, filepath.Base(name)+string(rune('0'+i)))
		content := []byte(name + "\n")
		if err := os.WriteFile(src, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := tr.Add(tree.Entry{Path: name, Kind: tree.File, Mode: 0o644, Source: src, Size: int64(len(content))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Add(tree.Entry{Path: "a/link", Kind: tree.Symlink, Mode: 0o777, Link: "b/c.txt"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{Linux, Windows, WindowsBase} {
		opt := Options{Format: f, Epoch: time.Unix(1700000000, 0)}
		var walked, listed bytes.Buffer
		if err := writeTree(&walked, tr, opt); err != nil {
			t.Fatal(err)
		}
		if err := WriteTar(&listed, tr.Entries(), opt); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(walked.Bytes(), listed.Bytes()) || walked.Len() == 0 {
			t.Errorf("%s: writeTree wrote %d bytes, WriteTar %d, not the same", f, walked.Len(), listed.Len())
		}
	}
}
