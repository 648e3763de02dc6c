package bounded

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// Output keeps all of what comes up to Max and its tail, and of more its
// first Max bytes and last min(Max, OutputTail) with the count left out
// between, whatever the sizes of the writes: checked against the whole
// stream for random ones.
func TestOutputKeepsHeadAndTail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := range 2000 {
		max := 1 + r.IntN(64)
		if run%100 == 0 {
			max = OutputTail + r.IntN(OutputTail) // the tail shorter than the head
		}
		tail := min(max, OutputTail)
		o := &Output{Max: max}
		var all bytes.Buffer
		for range r.IntN(12) {
			p := make([]byte, r.IntN(3*max))
			for i := range p {
				p[i] = byte('a' + r.IntN(26))
			}
			if n, err := o.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v; want every byte taken", n, err)
			}
			all.Write(p)
		}
		b := all.Bytes()
		want := string(b)
		if len(b) > max+tail {
			want = fmt.Sprintf("%s\n... %d bytes left out ...\n%s", b[:max], len(b)-max-tail, b[len(b)-tail:])
		}
		if got := o.String(); got != want {
			t.Fatalf("run %d, Max %d, %d bytes: String = %q, want %q", run, max, len(b), got, want)
		}
		if over := len(b) > max; o.Over() != over {
			t.Fatalf("run %d: Over = %v after %d bytes of Max %d", run, o.Over(), len(b), max)
		}
		if head := b[:min(len(b), max)]; !bytes.Equal(o.Bytes(), head) {
			t.Fatalf("run %d: Bytes = %q, want the first %d bytes %q", run, o.Bytes(), max, head)
		}
	}
}

// OnOver is called once, when the first byte past Max comes.
func TestOutputOnOver(t *testing.T) {
	calls := 0
	o := &Output{Max: 4, OnOver: func() { calls++ }}
	o.Write([]byte("abcd"))
	if calls != 0 {
		t.Fatalf("OnOver called %d times within Max", calls)
	}
	o.Write([]byte("e"))
	o.Write([]byte("fghijklmnopqrstuvwxyz"))
	if calls != 1 {
		t.Fatalf("OnOver called %d times past Max, want once", calls)
	}
}

// An Output of Max 0 keeps nothing and says so once anything comes.
func TestOutputZeroMax(t *testing.T) {
	o := &Output{}
	if o.Over() {
		t.Fatal("Over before any write")
	}
	o.Write([]byte("x"))
	if !o.Over() || len(o.Bytes()) != 0 {
		t.Fatalf("Max 0 after a byte: Over %v, Bytes %q; want over, nothing kept", o.Over(), o.Bytes())
	}
}

// A command's stdout and stderr may write at once.
func TestOutputConcurrentWrites(t *testing.T) {
	o := &Output{Max: 100}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				o.Write([]byte("0123456789"))
			}
		})
	}
	wg.Wait()
	if want := fmt.Sprintf("%s\n... %d bytes left out ...\n%s", bytes.Repeat([]byte("0123456789"), 10), 80000-200, bytes.Repeat([]byte("0123456789"), 10)); o.String() != want {
		t.Fatalf("String = %q, want %q", o.String(), want)
	}
}
