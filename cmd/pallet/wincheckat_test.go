package main

import (
	"os"
	"testing"
)

// TestWindowsLayoutAt checks, with the reader of wincheck_test.go, the
// Windows images of a layout built outside the tests, such as
// examples/windows-upstream's, which needs the module proxy:
//
//	PALLET_WINDOWS_LAYOUT=/tmp/out go test -run TestWindowsLayoutAt ./cmd/pallet
func TestWindowsLayoutAt(t *testing.T) {
	dir := os.Getenv("PALLET_WINDOWS_LAYOUT")
	if dir == "" {
		t.Skip("PALLET_WINDOWS_LAYOUT names no layout")
	}
	checkWindowsLayout(t, dir)
}
