//go:build !race

package cache

const race205 = false
