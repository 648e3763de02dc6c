//go:build !race

package tree

const raceSlowdown = 1
