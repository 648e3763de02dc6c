package archive

import (
	"context"
	"strings"
	"testing"
)

// TestEmptyZstdRefused: an empty file read as .tar.zst unpacked to
// nothing, where zstd -d says "unexpected end of file" (an empty .tar.gz
// or .tar.xz is refused by its decoder already).
func TestEmptyZstdRefused(t *testing.T) {
	for _, f := range []Format{TarGzip, TarXz, TarZstd, TarBzip2} {
		sb := newSandbox(t, f, nil)
		err := Extract(context.Background(), sb.src, f, sb.out, Options{Name: "empty.archive"})
		if err == nil || !strings.Contains(err.Error(), "empty.archive") {
			t.Errorf("empty %s: %v, want it refused naming the archive", f, err)
		}
	}
}
