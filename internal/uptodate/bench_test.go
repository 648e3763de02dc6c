package uptodate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTake stamps the tree at $PALLET_TAKE_BENCH (bench/workload gen
// files DIR 100000 makes one), or 2,000 small files made here.
func BenchmarkTake(b *testing.B) {
	dir := os.Getenv("PALLET_TAKE_BENCH")
	if dir == "" {
		dir = b.TempDir()
		for i := range 2000 {
			p := filepath.Join(dir, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Take([]string{dir}, jobs, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
