//go:build race

package image

// raceSlowdown scales the absolute time bounds of the tests: the race
// detector slows this package's work about tenfold, and a loaded CI
// machine on top of it went past bounds set for plain builds.
const raceSlowdown = 10
