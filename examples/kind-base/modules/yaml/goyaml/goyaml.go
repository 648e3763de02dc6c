// Package goyaml is the forked package, under its own licence.
package goyaml

// Name says which package this is.
func Name() string { return "goyaml fork" }
