// Package errdefs stands in for containerd's errdefs: Apache-2.0, with a
// NOTICE that has to ship with it.
package errdefs

// Name says which module this is.
func Name() string { return "errdefs v1.0.0" }
