//go:build !linux

package artifact

// kernelFS tells the kernel's made-up filesystems on Linux only, where
// pallet builds Go; elsewhere a module's link to one is read as a file.
func kernelFS(string) string { return "" }
