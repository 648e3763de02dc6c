//go:build !unix

package output

// otherFileSystem reports whether the directory dir is on another file
// system than its parent; where that cannot be told, no.
func otherFileSystem(dir string) (bool, error) { return false, nil }
