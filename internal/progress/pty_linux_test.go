package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns both ends of a new pseudo-terminal, a real terminal to
// the kernel's line discipline and to term.IsTerminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("numbering the pty: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pty's terminal end: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestAutoOnATerminal picks the live view on a real terminal and lays it
// out at the size the terminal reports.
func TestAutoOnATerminal(t *testing.T) {
	master, slave := openPTY(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 33, Row: 6}); err != nil {
		t.Fatalf("sizing the pty: %v", err)
	}
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the terminal end closes
		out <- string(b)
	}()
	t.Setenv("TERM", "xterm")
	r, err := New("auto", slave)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(*tty); !ok {
		t.Fatalf("auto on a terminal chose %T", r)
	}
	for i := range 8 {
		r.Start(fmt.Sprintf("step %d with a name longer than the terminal", i))
	}
	tt := r.(*tty)
	cols, rows, err := tt.size()
	if err != nil || cols != 33 || rows != 6 {
		t.Fatalf("size %dx%d, %v; want the terminal's 33x6", cols, rows, err)
	}
	tt.mu.Lock()
	view := tt.view(cols, rows, false)
	tt.mu.Unlock()
	r.Close()
	t.Setenv("TERM", "dumb")
	if r, _ := New("auto", slave); fmt.Sprintf("%T", r) != "*progress.plain" {
		t.Errorf("auto with TERM=dumb chose %T", r)
	}
	slave.Close()
	if len(view) != 5 {
		t.Errorf("live view of %d rows on a 6-row terminal:\n%s", len(view), strings.Join(view, "\n"))
	}
	for _, l := range view {
		if cells(l) > 32 {
			t.Errorf("line %q is wider than the 33-column terminal allows", l)
		}
	}
	if s := <-out; !strings.Contains(s, "\x1b[J") || !strings.Contains(s, "step 7 with") {
		t.Errorf("terminal received %q", s)
	}
}
