package artifact

import (
	"context"
	"errors"
	"io"
	"time"
)

// DefaultMaxDownload is the largest download accepted unless Limits says
// otherwise: far above any release archive or toolchain, yet small enough
// that a wrong URL or a hostile server cannot fill the disk.
const DefaultMaxDownload int64 = 16 << 30

// MaxGoMod bounds a go.mod read into memory: the largest in the field
// (Kubernetes') are tens of kilobytes.
const MaxGoMod = 16 << 20

// maxConfigFile bounds a user's configuration file read into memory
// (a .netrc, the go command's env file).
const maxConfigFile = 1 << 20

// DefaultStallTimeout is how long a download may receive nothing before
// the attempt is abandoned. It bounds a dead connection, not a slow one:
// a transfer that keeps moving may take as long as it needs.
const DefaultStallTimeout = 60 * time.Second

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
	return l
}

// errStalled is the cause given to an attempt's context when its
// watchdog fires, telling a stall apart from the caller's cancellation.
var errStalled = errors.New("download stalled")

// watchdog cancels an attempt's context when no byte arrives for idle.
type watchdog struct {
	timer *time.Timer
	idle  time.Duration
}

// newWatchdog derives from ctx a context that ends with cause errStalled
// once idle passes without a kick. stop must be called when done.
func newWatchdog(ctx context.Context, idle time.Duration) (context.Context, *watchdog, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{idle: idle, timer: time.AfterFunc(idle, func() { cancel(errStalled) })}
	return ctx, w, cancel
}

func (w *watchdog) kick() { w.timer.Reset(w.idle) }
func (w *watchdog) stop() { w.timer.Stop() }

// stalled tells whether ctx ended because its watchdog fired.
func stalled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errStalled)
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
		p.w.kick()
	}
	return n, err
}
