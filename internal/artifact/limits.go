package artifact

import (
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// DefaultDownloadTimeout is how long one download may take, retries
// included, unless the build says otherwise. The watchdog's floor
// (transfer.DefaultMinRate) ends a download that crawls, but one kept
// just above it, by a server or a path that slow, would take the size
// limit's hours; an hour is more than any release archive or toolchain
// needs over a network an image is built on.
const DefaultDownloadTimeout = time.Hour

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
	// retries and their waits included; zero means
	// DefaultDownloadTimeout. Unlike the watchdog's bounds, it holds
	// a download however it keeps moving.
	DownloadTimeout time.Duration
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
