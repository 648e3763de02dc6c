package lazyre

import (
	"sync"
	"testing"
)

func TestCompiledOnceOnFirstUse(t *testing.T) {
	re := New(`^a+$`)
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Go(func() { got[i] = re() })
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("call %d compiled its own regexp", i)
		}
	}
	if !re().MatchString("aaa") || re().MatchString("ab") {
		t.Fatal("the compiled expression does not match as written")
	}
}

func TestInvalidPanicsOnFirstUseNotBefore(t *testing.T) {
	re := New(`(`) // must not panic here
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression did not panic when used")
		}
	}()
	re()
}
