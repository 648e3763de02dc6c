package main

import (
	"os"
	"testing"
)

// TestMain gives the package's tests one cache of their own, so they
// neither read nor fill the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pallet-test-cache-*")
	if err != nil {
		panic(err)
	}
	os.Setenv("PALLET_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
