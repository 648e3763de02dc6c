package inspect

import (
	"archive/tar"
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

// The one-pass index of a docker archive keeps, for every name, only
// what finding and reading it needs: a hostile archive of many empty
// entries costs well under what its headers take (171 bytes an entry of
// 512), where keeping each header cost 387. The index is not bounded
// otherwise: it grows with the archive, as reading it does.
func TestTarIndexSize(t *testing.T) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	const n = 50000
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("blobs/sha256/%08d", i), Typeflag: tar.TypeReg, Mode: 0o644, Uname: "root", Gname: "root"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	idx, err := tarFiles(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	if len(idx.first) != n || len(idx.files) != n {
		t.Fatalf("indexed %d names, %d files, want %d", len(idx.first), len(idx.files), n)
	}
	if per > 250 {
		t.Errorf("the index holds %d bytes an entry, want at most 250", per)
	}
	runtime.KeepAlive(idx)
}
