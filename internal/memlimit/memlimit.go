// Package memlimit gives pallet a soft memory limit when the user set
// none: the heap is collected at the latest when it reaches Soft, or a
// quarter over what was live at the last collection if that is more.
// GOGC stays at its default, so a small heap is collected sooner, at
// twice what was live, as without a limit.
//
// With the runtime's default (GOGC=100) the heap grows to twice what is
// live before each collection; a no-op build of 100,000 small files, with
// about 65 MB live at its peak, reached 125-155 MB of RSS, and 95 MB
// with a limit of 84 MB. Once such a build held about 50 MB at its peak
// (a cold one, 45-55 MB while it writes its layer), the limit came down
// to 64 MB: 70-78 MB of RSS, for no more CPU than the build took before
// with the higher limit (it makes less garbage too). A fixed limit alone
// would make a build whose live heap outgrows it collect without pause
// (up to half the CPU, where the runtime caps it): after each collection
// the limit is raised to a quarter over the live heap, so such a build
// collects four times as often as with GOGC=100, never continuously.
// A GOMEMLIMIT the user set is left alone; GOMEMLIMIT=off turns any
// limit off.
package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Soft is the limit while the live heap is under Soft/1.25: with the
// runtime's own memory (stacks, metadata) and the program's text (about
// 16 MB of it paged in by a build), a process so limited stays under
// 80 MB of RSS.
const Soft = 64 << 20

// limitFor is the limit after a collection that left live bytes live.
func limitFor(live uint64) int64 {
	return max(Soft, int64(live+live/4))
}

var started atomic.Bool

// Start sets the soft limit, and keeps it at limitFor the live heap
// after every collection, unless GOMEMLIMIT is set or GOGC=off (a user
// who turned collection off did not ask for a limit to bring it back).
// It reports whether it did. Only the first call does anything.
func Start() bool {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || os.Getenv("GOGC") == "off" || !started.CompareAndSwap(false, true) {
		return false
	}
	debug.SetMemoryLimit(Soft)
	arm(&sentinel{})
	return true
}

// sentinel is garbage from the moment it is armed: its finalizer runs
// after each collection, which is the only hook the runtime gives.
// It holds a pointer so that it is not a tiny allocation, whose
// finalizer may never run.
type sentinel struct{ _ *int }

func arm(s *sentinel) {
	runtime.SetFinalizer(s, func(s *sentinel) {
		debug.SetMemoryLimit(limitFor(liveHeap()))
		arm(s)
	})
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// liveHeap is what the last collection left live, as the runtime counts
// it for its own goal. Only the finalizer goroutine calls it.
func liveHeap() uint64 {
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return liveSample[0].Value.Uint64()
}
