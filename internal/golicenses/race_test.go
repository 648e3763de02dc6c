//go:build race

package golicenses

// raceEnabled: the race detector drops a quarter of what sync.Pool is
// given, so allocation bounds that count on pooled decoders do not hold.
const raceEnabled = true
