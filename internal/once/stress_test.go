package once

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// Many callers of one key, some whose context is stopped before or while
// they wait: each stopped one that derives gets its own error, every
// other caller gets the one answer, derive runs for one caller at a time
// and succeeds once, and no caller is left waiting.
func TestSuccessManyCallersSomeStopped(t *testing.T) {
	for round := range 20 {
		var m sync.Map
		var active, most, derived atomic.Int32
		const n = 64
		ctxs := make([]context.Context, n)
		cancels := make([]context.CancelFunc, n)
		for i := range n {
			ctxs[i], cancels[i] = context.WithCancel(context.Background())
			if i%3 == 0 {
				cancels[i]() // stopped before it asks
			}
		}
		vs, errs := callers(n, func(i int) (int, error) {
			defer cancels[i]()
			return Success(&m, "k", func() (int, error) {
				a := active.Add(1)
				defer active.Add(-1)
				for {
					mo := most.Load()
					if a <= mo || most.CompareAndSwap(mo, a) {
						break
					}
				}
				if i%3 == 1 {
					// Stopped while it derives: the others waiting on it
					// must not take its error.
					cancels[i]()
				}
				if err := ctxs[i].Err(); err != nil {
					return 0, err
				}
				return 7 + int(derived.Add(1)) - 1, nil
			})
		})
		for i := range n {
			stopped := i%3 != 2
			if errs[i] != nil && !stopped {
				t.Fatalf("round %d: caller %d, never stopped, got %v", round, i, errs[i])
			}
			if errs[i] == nil && vs[i] != 7 {
				t.Fatalf("round %d: caller %d got %d, want the one answer 7", round, i, vs[i])
			}
		}
		if most.Load() != 1 {
			t.Fatalf("round %d: derive ran for %d callers at once", round, most.Load())
		}
		if derived.Load() != 1 {
			t.Fatalf("round %d: derived %d answers, want 1 kept", round, derived.Load())
		}
	}
}
