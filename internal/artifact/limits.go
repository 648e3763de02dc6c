package artifact

import (
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
