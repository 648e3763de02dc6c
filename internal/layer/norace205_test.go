//go:build !race

package layer

const raceEnabled = false
