package bounded

import (
	"fmt"
	"sync"
)

// Output holds what a command writes to it, in memory, whatever the
// command prints: its first Max bytes, and, once more come, its last
// ones besides (Max of them, at most OutputTail), so that an error can
// quote both how a failure began and how it ended (a go build with
// -gcflags=-m prints a line per decision of the compiler, hundreds of
// megabytes for a large module).
// It takes every write, so the command is never stopped by it; Over says
// whether anything was left out. Safe for a command's stdout and stderr
// at once.
type Output struct {
	Max int
	// OnOver, when set, is called once, as the first byte past Max
	// comes: to stop a command that would print without end.
	OnOver func()

	mu      sync.Mutex
	head    []byte
	tail    []byte // a ring of tailMax bytes once head is full
	at      int    // where the next byte goes in tail
	dropped int64  // bytes neither head nor tail holds
}

// OutputTail bounds the end of what an Output keeps past its first Max
// bytes: enough for the last lines of an error.
const OutputTail = 16 << 10

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	tailMax := min(o.Max, OutputTail)
	if room := o.Max - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if o.OnOver != nil && len(o.tail) == 0 && o.dropped == 0 {
		o.OnOver()
	}
	if len(p) > tailMax {
		o.dropped += int64(len(o.tail) + len(p) - tailMax)
		o.tail = append(o.tail[:0], p[len(p)-tailMax:]...)
		o.at = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(o.tail) < tailMax {
			k := min(tailMax-len(o.tail), len(p))
			o.tail = append(o.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(o.tail[o.at:], p)
		o.dropped += int64(k)
		o.at = (o.at + k) % tailMax
		p = p[k:]
	}
	return n, nil
}

// Over says whether more than Max bytes came: Bytes is then not all of
// them, and String says so.
func (o *Output) Over() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tail) > 0 || o.dropped > 0
}

// Bytes is all that came, when Over is false; else the first Max bytes.
func (o *Output) Bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.head
}

// String is all that came, or its beginning and end with how much was
// left out between them.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.tail) == 0 {
		return string(o.head)
	}
	tail := append(append([]byte(nil), o.tail[o.at:]...), o.tail[:o.at]...)
	if o.dropped == 0 {
		return string(o.head) + string(tail)
	}
	return fmt.Sprintf("%s\n... %d bytes left out ...\n%s", o.head, o.dropped, tail)
}
