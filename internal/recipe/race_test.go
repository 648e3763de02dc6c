//go:build race

package recipe

// raceEnabled: the race detector slows yaml.v3 tenfold, so absolute time
// bounds are checked only without it.
const raceEnabled = true
