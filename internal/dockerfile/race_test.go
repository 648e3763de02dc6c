//go:build race

package dockerfile

// raceEnabled: the race detector slows planning several times, so the
// time bounds of the limits tests are checked only without it.
const raceEnabled = true
