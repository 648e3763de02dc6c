// Package transfer holds the bounds every transfer pallet makes from the
// network gets by default (a download, a git fetch, a module proxy
// response, a registry request, a shared-cache entry), so that one
// number is said in one place and a flag or a recipe's limits change
// them all alike, and the one Watchdog that holds a transfer to its
// stall window and minimum rate.
package transfer

import "time"

// DefaultMaxBytes is the largest download accepted unless the build says
// otherwise: far above any release archive, toolchain or base layer, yet
// small enough that a wrong URL or a hostile server cannot fill the disk.
const DefaultMaxBytes int64 = 16 << 30

// DefaultStall is how long a transfer may move nothing before it is
// abandoned. It bounds a dead connection; DefaultMinRate bounds a slow
// one.
const DefaultStall = 60 * time.Second

// DefaultMinRate is the slowest a transfer may go, in bytes per second
// averaged over each stall timeout: a server that sends a byte now and
// then, never pausing a whole stall timeout, would otherwise hold a build
// for as long as the size limit takes at its pace. 1 KiB/s is far below
// any network an image is built over: a large transfer that keeps moving
// may still take as long as it needs.
const DefaultMinRate int64 = 1 << 10

// Limits bound one transfer: how large it may be, and the pace a
// Watchdog holds it to. Each consumer (a download, a registry request, a
// shared-cache entry) takes them as they are, its own bounds beside
// them, so that a default is filled in here and nowhere else. A zero (or
// negative) field takes its default.
type Limits struct {
	// MaxBytes is the largest body accepted: a larger declared size is
	// refused before reading, and a body running past it is cut off.
	// Zero means DefaultMaxBytes.
	MaxBytes int64
	// Stall is how long a transfer may move nothing, waiting for the
	// response included, and the window MinRate is measured over.
	// Zero means DefaultStall.
	Stall time.Duration
	// MinRate is the fewest bytes per second a body must bring, over
	// each Stall from its first byte on (see Floor). Zero means
	// DefaultMinRate.
	MinRate int64
}

// WithDefaults returns l with each field not set taking its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.Stall <= 0 {
		l.Stall = DefaultStall
	}
	if l.MinRate <= 0 {
		l.MinRate = DefaultMinRate
	}
	return l
}

// DefaultTimeout is how long one transfer may take in all, retries
// included, unless the build says otherwise (limits.download-timeout,
// --download-timeout). The watchdog's floor (DefaultMinRate) ends a
// transfer that crawls, but one kept just above it, by a peer or a path
// that slow, would take the size limit's hours; an hour is more than any
// release archive, toolchain, repository or base layer needs over a
// network an image is built on.
const DefaultTimeout = time.Hour
