// Package ttrpc stands in for containerd's ttrpc: Apache-2.0 with a
// NOTICE, depending on errdefs.
package ttrpc

import "example.com/standin/errdefs"

// Name says which module this is, and which it depends on.
func Name() string { return "ttrpc v1.2.7 (" + errdefs.Name() + ")" }
