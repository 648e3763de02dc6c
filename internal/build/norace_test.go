//go:build !race

package build

const raceEnabled = false
