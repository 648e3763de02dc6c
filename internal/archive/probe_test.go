package archive

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestProbeBombs(t *testing.T) {
	if os.Getenv("PROBE") == "" {
		t.Skip()
	}
	const n = 4 << 30
	for _, f := range []Format{TarGzip, TarZstd, TarXz, Zip} {
		var data []byte
		if f == Zip {
			data = zipBomb(t, n+mib)
		} else {
			data = zerosArchive(t, f, tarPrefix(t, nil, "zeros", n-512*1024), n+mib)
		}
		s := newSandbox(t, f, data)
		start := time.Now()
		err := Extract(context.Background(), s.src, f, s.out, Options{MaxBytes: n})
		el := time.Since(start)
		logical, disk := diskUsage(t, s.out)
		t.Logf("%s: %d-byte archive: %v to %v; %d bytes of files, %d of disk", f, len(data), el, err, logical, disk)
	}
}
