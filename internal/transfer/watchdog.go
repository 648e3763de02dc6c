package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// StallError is why a Watchdog ended a transfer: a window passed that
// moved fewer bytes than MinRate asks over it. Moved tells a stop (0)
// from a crawl.
type StallError struct {
	Window  time.Duration
	Moved   int64
	MinRate int64
}

func (e *StallError) Error() string {
	if e.Moved == 0 {
		return fmt.Sprintf("nothing moved for %s", e.Window)
	}
	return fmt.Sprintf("%d bytes moved in %s, under the floor of %d bytes/s", e.Moved, e.Window, e.MinRate)
}

// Timeout reports true: a stall is a timeout, as net.Error means it.
func (e *StallError) Timeout() bool { return true }

// Temporary reports true: the next attempt may find the network moving.
func (e *StallError) Temporary() bool { return true }

// Floor is how many bytes a window must move at minRate: at least one,
// so that a zero rate still catches a transfer that stopped.
func Floor(window time.Duration, minRate int64) int64 {
	return max(1, int64(float64(minRate)*window.Seconds()))
}

// A Watchdog ends a transfer that moves too little: each window, from
// its start or from the moment the last one reached its Floor, must
// bring the Floor, or fire is called once with what it brought. One
// rule catches both a dead connection (nothing for a window) and a
// server that drips a byte now and then, which would otherwise hold a
// build for as long as the size limit takes at its pace.
//
// The window is pushed back as soon as the floor is reached, not at
// fixed ticks, so that a steady transfer is never judged on a window cut
// short; and a byte counted is never counted for two windows.
type Watchdog struct {
	minRate int64
	fire    func(*StallError)

	mu     sync.Mutex
	timer  *time.Timer
	window time.Duration
	// due is when the current window ends: the timer may fire after it
	// was pushed back (its function already started), and then finds
	// the window not over.
	due   time.Time
	moved int64
	done  bool
	probe func() int64
}

// NewWatchdog starts a Watchdog whose windows last window, each to bring
// minRate bytes a second (see Floor). fire, called at most once and from
// another goroutine, typically cancels the transfer's context with the
// error as its cause.
func NewWatchdog(window time.Duration, minRate int64, fire func(*StallError)) *Watchdog {
	w := &Watchdog{minRate: minRate, fire: fire, window: window, due: time.Now().Add(window)}
	w.timer = time.AfterFunc(window, w.check)
	return w
}

// Moved counts n bytes moved.
func (w *Watchdog) Moved(n int64) {
	if n <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.moved += n
	if !w.done && w.moved >= Floor(w.window, w.minRate) {
		w.restart(w.window)
	}
}

// Restart begins a new window of the given length, forgetting what the
// current one moved: a transfer entering a phase with its own bound
// (waiting for an answer, receiving a body).
func (w *Watchdog) Restart(window time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.restart(window)
	}
}

// restart is Restart with mu held.
func (w *Watchdog) restart(window time.Duration) {
	w.window, w.moved = window, 0
	w.due = time.Now().Add(window)
	w.timer.Reset(window)
}

// Probe sets a count of bytes moved that no Moved reports (a file the
// kernel sends): it is asked, when a window ends, how many moved since
// it was last asked.
func (w *Watchdog) Probe(since func() int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.probe = since
}

// Stop ends the watch: fire is not called after Stop returns, unless it
// was being called already.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.timer.Stop()
}

func (w *Watchdog) check() {
	w.mu.Lock()
	probe := w.probe
	w.mu.Unlock()
	var probed int64
	if probe != nil {
		// Outside mu: the probe may take its owner's lock, which may be
		// held by a caller of Moved.
		probed = probe()
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.moved += max(0, probed)
	if left := time.Until(w.due); left > 0 {
		w.timer.Reset(left)
		w.mu.Unlock()
		return
	}
	if w.moved >= Floor(w.window, w.minRate) {
		w.restart(w.window)
		w.mu.Unlock()
		return
	}
	w.done = true
	err := &StallError{Window: w.window, Moved: w.moved, MinRate: w.minRate}
	w.mu.Unlock()
	w.fire(err)
}

// Reader returns r counting what is read through it toward w.
func (w *Watchdog) Reader(r io.Reader) io.Reader { return &watched{r: r, w: w} }

type watched struct {
	r io.Reader
	w *Watchdog
}

func (r *watched) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.w.Moved(int64(n))
	return n, err
}

// Watch derives from ctx a context that the returned Watchdog ends once a
// window brings fewer bytes than minRate asks over it, the *StallError
// (wrapped) as its cause; StallOf finds it there. The wrapping hides the
// error's Temporary: a client library that retries temporary errors would
// retry it, after its backoff, on a context that is over. Stop
// must be called on the Watchdog, and the cancel function, when done.
func Watch(ctx context.Context, window time.Duration, minRate int64) (context.Context, *Watchdog, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	dog := NewWatchdog(window, minRate, func(e *StallError) { cancel(fmt.Errorf("%w", e)) })
	return ctx, dog, cancel
}

// StallOf is the *StallError that ended ctx, if a Watch's Watchdog ended
// it rather than a cancellation of the caller's.
func StallOf(ctx context.Context) *StallError {
	var se *StallError
	if errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}
