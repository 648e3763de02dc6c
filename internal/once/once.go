// Package once derives a value once per key of a sync.Map, for the
// callers of a build (or a process) that would each run the same slow
// step: a go command, a file read and proven. Value keeps whatever the
// step gave, an error included; Success keeps only an answer, for steps
// that fail for one caller's sake (its context stopped) and may succeed
// for the next.
package once

import (
	"errors"
	"sync"
)

// errPanicked is what a key's later callers get when its derive
// panicked: sync.Once counts a panicking function as done, and would
// hand them a zero value with no error, taken for an answer.
var errPanicked = errors.New("deriving it panicked")

// entry is a value derived once, and the error deriving it gave.
type entry[V any] struct {
	once sync.Once
	v    V
	err  error
}

// Value is what derive gives for key, derived once per key of m: later
// callers, and those that came meanwhile, wait for the first's answer and
// get it, error included. m holds only what Value and Success store.
func Value[K comparable, V any](m *sync.Map, key K, derive func() (V, error)) (V, error) {
	v, _ := m.LoadOrStore(key, &entry[V]{})
	e := v.(*entry[V])
	e.once.Do(func() {
		e.err = errPanicked
		e.v, e.err = derive()
	})
	return e.v, e.err
}

// Success is what derive gives for key, derived once per key of m and
// kept once it succeeds. An error is not kept: the caller whose derive
// failed gets it, and the key is dropped, so the next caller derives
// afresh; a caller that was waiting on it never takes another's error
// (that one may have been stopped by its own context), but derives
// again, or waits for a caller that does. derive runs for one caller of
// a key at a time.
func Success[K comparable, V any](m *sync.Map, key K, derive func() (V, error)) (V, error) {
	for {
		v, _ := m.LoadOrStore(key, &entry[V]{})
		e := v.(*entry[V])
		mine := false
		e.once.Do(func() {
			mine = true
			e.err = errPanicked
			e.v, e.err = derive()
		})
		if e.err == nil {
			return e.v, nil
		}
		m.CompareAndDelete(key, e)
		if mine {
			return e.v, e.err
		}
	}
}
