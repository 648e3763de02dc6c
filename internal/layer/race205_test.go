//go:build race

package layer

// raceEnabled: the race detector makes allocations of its own.
const raceEnabled = true
