//go:build !linux

package output

// probeUnnamed: only Linux makes a file without a name (O_TMPFILE).
func probeUnnamed(string) (bool, error) { return false, nil }
