// Package lazyre compiles a regular expression when it is first used
// rather than when the program starts. A no-op build is mostly process
// start-up, and the patterns pallet compiled in package initializers
// were a tenth of it; most commands never use most of them.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns the compiled expr, compiling it on the first call. Like
// regexp.MustCompile it panics if expr is invalid, but on that first
// call: every pattern is exercised by its package's tests.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
