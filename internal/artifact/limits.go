package artifact

import (
	"cmp"
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// DefaultDownloadTimeout is how long one download, git fetch, clone or
// tag lookup, or module proxy response may take, retries included,
// unless the build says otherwise: the one default of every transfer's
// total time.
const DefaultDownloadTimeout = transfer.DefaultTimeout

// MaxGoMod bounds a go.mod read into memory: the largest in the field
// (Kubernetes') are tens of kilobytes.
const MaxGoMod = 16 << 20

// maxConfigFile bounds a user's configuration file read into memory
// (a .netrc, the go command's env file).
const maxConfigFile = 1 << 20

// Limits bound what a Fetcher takes in. A zero field takes its default.
type Limits struct {
	// Limits bound each download, git fetch and module proxy response
	// (limits.download, limits.stall): its size, and the pace its
	// watchdog holds it to, waiting for the response included. A
	// download's stalled or crawling attempt fails and is retried like
	// a broken connection.
	transfer.Limits
	// DownloadTimeout bounds one download (limits.download-timeout,
	// --download-timeout), from its first request to its last byte,
	// retries and their waits included, the git work of one pinned
	// commit in all (fetch, fallback full fetch, checkout; a fetch of the
	// commit alone that ran out of it is not tried again as a full
	// fetch), a lone tag lookup, and
	// each module proxy response the go command gets through the gate;
	// zero means DefaultDownloadTimeout. Unlike the
	// watchdog's bounds, it holds a transfer however it keeps moving.
	DownloadTimeout time.Duration
	// Unpack bounds the archives unpacked.
	Unpack UnpackLimits
}

// timeout is DownloadTimeout, or its default when zero.
func (l Limits) timeout() time.Duration {
	return cmp.Or(l.DownloadTimeout, DefaultDownloadTimeout)
}

// UnpackLimits bound one archive's extraction (archive.Options holds their
// meaning and defaults). Zero means the default.
type UnpackLimits struct {
	MaxBytes   int64
	MaxEntries int
	MaxWindow  int64
}
