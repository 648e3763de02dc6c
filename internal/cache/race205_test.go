//go:build race

package cache

// race205: the race detector makes allocations of its own.
const race205 = true
