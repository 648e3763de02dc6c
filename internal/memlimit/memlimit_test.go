package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestLimitFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, Soft},
		{40 << 20, Soft},
		{Soft * 4 / 5, Soft},     // a quarter over is Soft itself
		{Soft, Soft + Soft/4},    // above: a quarter over the live heap
		{1 << 30, 1<<30 + 1<<28}, // a big build is not held to Soft
		{3 << 30, 3<<30 + 3<<28},
	} {
		if got := limitFor(c.live); got != c.want {
			t.Errorf("limitFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// Not parallel: it changes the process's memory limit, and reads it.
func TestStart(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || os.Getenv("GOGC") == "off" {
		if Start() {
			t.Fatal("Start set a limit over GOMEMLIMIT or GOGC=off")
		}
		t.Skip("GOMEMLIMIT or GOGC=off is set: the rest needs them unset")
	}
	if !Start() {
		t.Fatal("Start did not set the limit")
	}
	if Start() {
		t.Error("a second Start set the limit again")
	}
	if got := debug.SetMemoryLimit(-1); got != Soft {
		t.Errorf("limit %d after Start, want %d", got, Soft)
	}
	// With more than Soft live, the limit follows the live heap after a
	// collection rather than holding it at Soft.
	live := make([][]byte, 0, 2*Soft>>20)
	for range cap(live) {
		live = append(live, make([]byte, 1<<20))
	}
	want := int64(2 * Soft)
	var got int64
	for range 100 {
		runtime.GC()
		// The finalizer runs on its own goroutine once the collection is
		// done; a later collection's wait lets it.
		if got = debug.SetMemoryLimit(-1); got >= want {
			break
		}
		runtime.Gosched()
	}
	if got < want {
		t.Errorf("limit %d with %d bytes live, want at least %d", got, 2*Soft, want)
	}
	runtime.KeepAlive(live)
}
