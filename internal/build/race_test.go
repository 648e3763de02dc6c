//go:build race

package build

// raceEnabled: the race detector allocates beside the program, so
// allocation bounds do not hold under it.
const raceEnabled = true
