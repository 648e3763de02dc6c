package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// Decompress holds a stream to the limits Extract holds an archive to: a
// small blob expanding to a gigabyte, or claiming a window over the
// limit, fails with ErrLimit, after no more than the limit is produced.
func TestDecompressBounds(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name    string
		f       Format
		blob    []byte
		opt     Options
		want    int64 // bytes of a stream within the limits
		wantErr string
	}{
		{"gzip within", TarGzip, gzipZeros(t, []byte("x"), mib), Options{MaxBytes: 2 * mib}, mib + 1, ""},
		{"gzip bomb", TarGzip, gzipZeros(t, []byte("x"), 1<<30), Options{MaxBytes: mib}, 0, "expands beyond the limit of 1048576 bytes"},
		{"zstd bomb", TarZstd, zstdZeros(t, []byte("x"), 1<<30, zstdWindow128K, 0), Options{MaxBytes: mib}, 0, "expands beyond the limit of 1048576 bytes"},
		{"zstd window", TarZstd, zstdZeros(t, []byte("x"), 256<<10, 19<<3, 0), Options{MaxWindow: mib}, 0, "window larger than the limit of 1048576 bytes"},
		{"xz bomb", TarXz, xzZeros(t, []byte("x"), 1<<30, 0), Options{MaxBytes: mib}, 0, "expands beyond the limit of 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.blob) > 1<<30/256 {
				t.Fatalf("the blob is %d bytes: not a bomb", len(tc.blob))
			}
			rc, err := Decompress(context.Background(), bytes.NewReader(tc.blob), tc.f, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			n, err := io.Copy(io.Discard, rc)
			if tc.wantErr == "" {
				if err != nil || n != tc.want {
					t.Errorf("read %d bytes (%v), want %d", n, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want an ErrLimit saying %q", err, tc.wantErr)
			}
			if n > mib+1 {
				t.Errorf("%d bytes produced past the limit", n)
			}
		})
	}
}
