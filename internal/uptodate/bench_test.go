package uptodate

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// BenchmarkTake stamps the tree at $PALLET_TAKE_BENCH (bench/workload gen
// files DIR 100000 makes one), or 2,000 small files made here.
func BenchmarkTake(b *testing.B) {
	dir := os.Getenv("PALLET_TAKE_BENCH")
	if dir == "" {
		dir = fixture.SmallFiles(b, 2000, 100)
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
