//go:build !race

package recipe

const raceEnabled = false
