//go:build race

package artifact

// raceEnabled: the race detector drops a quarter of what sync.Pool is
// given, so allocation bounds that count on pooled buffers and decoders
// do not hold.
const raceEnabled = true
