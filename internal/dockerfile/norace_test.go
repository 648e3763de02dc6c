//go:build !race

package dockerfile

const raceEnabled = false
