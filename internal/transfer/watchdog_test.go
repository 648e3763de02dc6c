package transfer_test

import (
	"bytes"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// window is the tests' window: long enough for a loaded machine to
// schedule the writers below well within it.
const window = 200 * time.Millisecond

// watch starts a Watchdog whose firing the test can wait for.
func watch(minRate int64) (*transfer.Watchdog, chan *transfer.StallError) {
	fired := make(chan *transfer.StallError, 1)
	return transfer.NewWatchdog(window, minRate, func(e *transfer.StallError) { fired <- e }), fired
}

func wait(t *testing.T, fired chan *transfer.StallError, within time.Duration) *transfer.StallError {
	t.Helper()
	select {
	case e := <-fired:
		return e
	case <-time.After(within):
		t.Fatalf("no stall within %s", within)
		return nil
	}
}

func TestWatchdogStop(t *testing.T) {
	t.Parallel()
	w, fired := watch(1)
	start := time.Now()
	e := wait(t, fired, 10*window)
	if e.Moved != 0 || e.Window != window || !strings.Contains(e.Error(), "nothing moved for "+window.String()) {
		t.Errorf("got %+v (%v)", e, e)
	}
	if elapsed := time.Since(start); elapsed < window {
		t.Errorf("fired after %s, before the window of %s", elapsed, window)
	}
	w.Stop()
}

// Bytes that keep coming at the rate keep the transfer going past many
// windows; once they stop, it stalls.
func TestWatchdogSteadyThenStopped(t *testing.T) {
	t.Parallel()
	// 1 KiB a window: each read below is the floor, so only a writer
	// held up for a whole window could fail it.
	const rate = 5 << 10
	w, fired := watch(rate)
	defer w.Stop()
	r := w.Reader(bytes.NewReader(make([]byte, 16<<10)))
	buf := make([]byte, 1<<10)
	start := time.Now()
	for {
		if _, err := r.Read(buf); err == io.EOF {
			break
		}
		select {
		case e := <-fired:
			t.Fatalf("a steady transfer stalled after %s: %v", time.Since(start), e)
		case <-time.After(window / 4):
		}
	}
	if e := wait(t, fired, 10*window); e.Moved != 0 {
		t.Errorf("a stopped transfer: %v", e)
	}
}

// A transfer that never stops, but drips under the floor, ends at the
// end of its first window.
func TestWatchdogCrawl(t *testing.T) {
	t.Parallel()
	w, fired := watch(1 << 20)
	defer w.Stop()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(window / 10):
				w.Moved(1)
			}
		}
	}()
	e := wait(t, fired, 10*window)
	if e.Moved == 0 || e.MinRate != 1<<20 || !strings.Contains(e.Error(), "under the floor of 1048576 bytes/s") {
		t.Errorf("a crawl: %+v (%v)", e, e)
	}
}

func TestWatchdogStopped(t *testing.T) {
	t.Parallel()
	w, fired := watch(1)
	w.Stop()
	select {
	case e := <-fired:
		t.Fatalf("fired after Stop: %v", e)
	case <-time.After(3 * window):
	}
}

// Restart gives the next phase its own window, and what the phase
// before moved does not count for it.
func TestWatchdogRestart(t *testing.T) {
	t.Parallel()
	w, fired := watch(1)
	defer w.Stop()
	w.Restart(4 * window)
	select {
	case e := <-fired:
		t.Fatalf("fired within the longer window: %v", e)
	case <-time.After(2 * window):
	}
	if e := wait(t, fired, 10*window); e.Window != 4*window {
		t.Errorf("window %s, want %s", e.Window, 4*window)
	}
}

// Bytes only a probe sees (a file the kernel sends) keep the transfer
// going.
func TestWatchdogProbe(t *testing.T) {
	t.Parallel()
	w, fired := watch(1)
	defer w.Stop()
	var probes atomic.Int64
	w.Probe(func() int64 {
		if probes.Add(1) <= 3 {
			return 1
		}
		return 0
	})
	e := wait(t, fired, 20*window)
	if n := probes.Load(); n != 4 || e.Moved != 0 {
		t.Errorf("fired after %d probes with %v", n, e)
	}
}

func TestFloor(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		rate   int64
		want   int64
	}{{time.Minute, 1024, 60 << 10}, {time.Second / 2, 1000, 500}, {time.Second, 0, 1}, {time.Millisecond, 10, 1}} {
		if got := transfer.Floor(tc.window, tc.rate); got != tc.want {
			t.Errorf("Floor(%s, %d) = %d, want %d", tc.window, tc.rate, got, tc.want)
		}
	}
}
