package artifact

import (
	"testing"
	"time"
)

// The walks that measure a fetch take a bounded share of a core however
// large the repository grows, and still come often enough to see it grow
// within the stall bound.
func TestWatchInterval(t *testing.T) {
	for _, c := range []struct {
		took, stall, want time.Duration
	}{
		{time.Millisecond, time.Minute, watchEvery},       // a small repository: as often as before
		{50 * time.Millisecond, time.Minute, time.Second}, // 60,000 loose objects: 1/20 of the time
		{2 * time.Second, time.Minute, 15 * time.Second},  // capped by the stall bound
		{2 * time.Second, 100 * time.Millisecond, watchEvery},
	} {
		if got := watchInterval(c.took, c.stall); got != c.want {
			t.Errorf("watchInterval(%v, %v) = %v, want %v", c.took, c.stall, got, c.want)
		}
		if got := watchInterval(c.took, c.stall); got < 20*c.took && got < c.stall/4 {
			t.Errorf("watchInterval(%v, %v) = %v: walks would take over 1/20 of the time", c.took, c.stall, got)
		}
	}
}
