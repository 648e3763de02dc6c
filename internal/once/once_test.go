package once

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// callers runs n callers of call at once, and returns what each got.
func callers(n int, call func(i int) (int, error)) ([]int, []error) {
	vs, errs := make([]int, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { vs[i], errs[i] = call(i) })
	}
	wg.Wait()
	return vs, errs
}

// Concurrent callers of one key get the one answer, derived once, from
// Value and Success alike.
func TestDerivedOnce(t *testing.T) {
	for name, get := range map[string]func(*sync.Map, string, func() (int, error)) (int, error){
		"Value":   Value[string, int],
		"Success": Success[string, int],
	} {
		var m sync.Map
		var derived atomic.Int32
		vs, errs := callers(16, func(int) (int, error) {
			return get(&m, "k", func() (int, error) { return int(derived.Add(1)), nil })
		})
		for i := range vs {
			if vs[i] != 1 || errs[i] != nil {
				t.Fatalf("%s: caller %d got %d, %v; want the one answer, 1", name, i, vs[i], errs[i])
			}
		}
		if n := derived.Load(); n != 1 {
			t.Fatalf("%s: derived %d times for one key, want once", name, n)
		}
	}
}

func TestValueKeepsError(t *testing.T) {
	var m sync.Map
	var derived atomic.Int32
	bad := errors.New("bad")
	for range 2 {
		if _, err := Value(&m, "e", func() (int, error) { derived.Add(1); return 0, bad }); err != bad {
			t.Fatalf("Value = %v, want the error derive gave", err)
		}
	}
	if n := derived.Load(); n != 1 {
		t.Fatalf("derived %d times, want the error kept", n)
	}
}

// A caller whose derive fails gets its error; the callers that waited on
// it do not, but an answer derived again, one at a time; and once
// derived, the answer is kept.
func TestSuccessErrorNotKept(t *testing.T) {
	for round := range 50 {
		var m sync.Map
		var active, most, derived atomic.Int32
		const waiters = 8
		calling := make(chan struct{}, waiters)
		failing := make(chan struct{})
		first := func() (int, error) {
			close(failing)
			// Let the waiters reach the key before this fails: they
			// find it derived or dropped either way, so the outcome
			// does not depend on how far they got.
			for range waiters {
				<-calling
			}
			for range 100 {
				runtime.Gosched()
			}
			return 0, fmt.Errorf("stopped")
		}
		derive := func() (int, error) {
			n := active.Add(1)
			defer active.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			runtime.Gosched()
			return int(derived.Add(1)), nil
		}
		var firstErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, firstErr = Success(&m, "k", first) })
		<-failing
		vs, errs := callers(waiters, func(int) (int, error) {
			calling <- struct{}{}
			return Success(&m, "k", derive)
		})
		wg.Wait()
		if firstErr == nil {
			t.Fatal("the failed derive's caller got no error")
		}
		for i := range vs {
			if errs[i] != nil || vs[i] != 1 {
				t.Fatalf("round %d: waiter %d got %d, %v; want the one answer derived after the failure", round, i, vs[i], errs[i])
			}
		}
		if n := most.Load(); n != 1 {
			t.Fatalf("round %d: derive ran for %d callers at once", round, n)
		}
		if v, err := Success(&m, "k", derive); v != 1 || err != nil || derived.Load() != 1 {
			t.Fatalf("round %d: after the answer, Success = %d, %v and derived %d times; want 1 kept", round, v, err, derived.Load())
		}
	}
}

func TestSuccessNextCallerDerivesAfresh(t *testing.T) {
	var m sync.Map
	if _, err := Success(&m, "k", func() (int, error) { return 0, errors.New("stopped") }); err == nil {
		t.Fatal("Success = nil error, want derive's")
	}
	v, err := Success(&m, "k", func() (int, error) { return 2, nil })
	if v != 2 || err != nil {
		t.Fatalf("Success after an error = %d, %v; want 2 derived afresh", v, err)
	}
	held := 0
	m.Range(func(any, any) bool { held++; return true })
	if held != 1 {
		t.Fatalf("the map holds %d entries, want the one answer", held)
	}
}

// A derive that panics is no answer: Value's later callers get an error,
// not the zero value sync.Once would leave them, and Success's derive
// afresh.
func TestPanickedDeriveIsNoAnswer(t *testing.T) {
	panicking := func() (int, error) { panic("boom") }
	for name, get := range map[string]func(*sync.Map, string, func() (int, error)) (int, error){
		"Value":   Value[string, int],
		"Success": Success[string, int],
	} {
		var m sync.Map
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("%s: recovered %v, want the derive's panic", name, r)
				}
			}()
			get(&m, "k", panicking)
		}()
		v, err := get(&m, "k", func() (int, error) { return 7, nil })
		switch name {
		case "Value":
			if err == nil {
				t.Fatalf("Value after a panicked derive = %d, nil; want an error", v)
			}
		case "Success":
			if v != 7 || err != nil {
				t.Fatalf("Success after a panicked derive = %d, %v; want 7 derived afresh", v, err)
			}
		}
	}
}
