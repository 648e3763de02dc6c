// Package yaml stands in for sigs.k8s.io/yaml: MIT at its root, with a
// fork of another project in goyaml/ under that project's own licence and
// NOTICE, found only by looking below the module's root.
package yaml

import "example.com/standin/yaml/goyaml"

// Name says which module this is.
func Name() string { return "yaml v1.4.0 (" + goyaml.Name() + ")" }
