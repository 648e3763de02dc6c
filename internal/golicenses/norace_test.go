//go:build !race

package golicenses

const raceEnabled = false
