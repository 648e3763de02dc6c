package artifact

import "github.com/pallet-dev/pallet/internal/transfer"

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
