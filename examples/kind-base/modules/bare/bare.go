// Package bare is a module that ships no licence file at all: pallet
// warns about it, and fails with --require-licenses, naming it.
package bare

// Name says which module this is.
func Name() string { return "bare v0.1.0" }
