// Package multierror stands in for hashicorp/go-multierror: MPL-2.0,
// whose terms ask that its source be made available with the binary.
package multierror

// Name says which module this is.
func Name() string { return "go-multierror v1.1.1" }
