//go:build !race

package image

const raceSlowdown = 1
