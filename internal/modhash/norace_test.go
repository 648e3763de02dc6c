//go:build !race

package modhash

const raceEnabled = false
