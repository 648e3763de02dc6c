package artifact

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// The defaults of Limits: those of every transfer.
const (
	DefaultMaxDownload  = transfer.DefaultMaxBytes
	DefaultStallTimeout = transfer.DefaultStall
	DefaultMinRate      = transfer.DefaultMinRate
)

// MaxGoMod bounds a go.mod read into memory: the largest in the field
// (Kubernetes') are tens of kilobytes.
const MaxGoMod = 16 << 20

// maxConfigFile bounds a user's configuration file read into memory
// (a .netrc, the go command's env file).
const maxConfigFile = 1 << 20

// Limits bound each download. A zero field takes its default.
type Limits struct {
	// MaxBytes is the largest body accepted: a larger Content-Length is
	// refused before reading, and a body running past it is cut off.
	// Zero means DefaultMaxDownload.
	MaxBytes int64
	// Stall is how long an attempt may go without receiving a byte,
	// waiting for the response included; the attempt then fails and is
	// retried like a broken connection. Zero means DefaultStallTimeout.
	Stall time.Duration
	// MinRate is the fewest bytes per second a response body may bring,
	// over each Stall from its first byte on; the attempt then fails and
	// is retried as a stalled one. Zero means DefaultMinRate.
	MinRate int64
	// Unpack bounds the archives unpacked.
	Unpack UnpackLimits
}

// UnpackLimits bound one archive's extraction (archive.Options holds their
// meaning and defaults). Zero means the default.
type UnpackLimits struct {
	MaxBytes   int64
	MaxEntries int
	MaxWindow  int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxDownload
	}
	if l.Stall <= 0 {
		l.Stall = DefaultStallTimeout
	}
	if l.MinRate <= 0 {
		l.MinRate = DefaultMinRate
	}
	return l
}

// errStalled and errTooSlow are the causes given to an attempt's context
// when its watchdog fires, telling a stall or a crawl apart from the
// caller's cancellation.
var (
	errStalled = errors.New("download stalled")
	errTooSlow = errors.New("download too slow")
)

// watchdog cancels an attempt's context when no byte arrives for idle,
// and, once the body has started (pace), when fewer than min bytes arrive
// in any idle after that.
type watchdog struct {
	timer  *time.Timer
	idle   time.Duration
	cancel context.CancelCauseFunc
	// n counts the body's bytes; the pace check reads it from its own
	// goroutine, which closing paced ends.
	n     atomic.Int64
	paced chan struct{}
}

// newWatchdog derives from ctx a context that ends with cause errStalled
// once idle passes without a kick. stop must be called when done.
func newWatchdog(ctx context.Context, idle time.Duration) (context.Context, *watchdog, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{idle: idle, cancel: cancel, timer: time.AfterFunc(idle, func() { cancel(errStalled) })}
	return ctx, w, cancel
}

func (w *watchdog) kick() { w.timer.Reset(w.idle) }

func (w *watchdog) stop() {
	w.timer.Stop()
	if w.paced != nil {
		close(w.paced)
	}
}

// pace starts the rate check: from now on, each idle must bring at
// least min bytes. It is called once, before the body is read.
func (w *watchdog) pace(min int64) {
	w.paced = make(chan struct{})
	go func() {
		t := time.NewTicker(w.idle)
		defer t.Stop()
		last := w.n.Load()
		for {
			select {
			case <-w.paced:
				return
			case <-t.C:
				// Nothing at all is the stall timer's to say, as it
				// will within idle.
				n := w.n.Load()
				if n > last && n-last < min {
					w.cancel(errTooSlow)
					return
				}
				last = n
			}
		}
	}()
}

// stalled tells whether ctx ended because its watchdog fired.
func stalled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errStalled)
}

// tooSlow tells whether ctx ended because the body came too slowly.
func tooSlow(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errTooSlow)
}

// progressReader kicks the watchdog on every byte received and counts them.
type progressReader struct {
	r io.Reader
	w *watchdog
	n int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.n += int64(n)
		p.w.n.Add(int64(n))
		p.w.kick()
	}
	return n, err
}
