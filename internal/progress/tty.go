package progress

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/width"
)

// tty redraws a view of the steps in place a few times a second: a
// header, then failed, running and the latest finished steps, each
// clipped to the terminal's width, the list clipped to its height.
// Warnings are printed once above the view, where they scroll away as
// ordinary output. On Close the final view lists every step, once.
type tty struct {
	mu      sync.Mutex
	w       io.Writer
	size    func() (cols, rows int, err error)
	now     func() time.Time
	start   time.Time
	steps   []*step
	pending []string // warning lines not yet printed above the view
	lines   int      // rows of the view on screen, which the next frame overwrites
	closed  bool
	done    chan struct{}
	stopped sync.WaitGroup
	once    sync.Once
}

type step struct {
	name     string
	start    time.Time
	end      time.Time
	note     string
	err      error
	finished bool
}

// Fallback size when the size cannot be read (--progress tty into a pipe).
const (
	defaultCols = 80
	defaultRows = 24
	// maxCols keeps step times near their names on a very wide terminal.
	maxCols = 120
	// redraw is the frame interval: live enough for counters, cheap.
	redraw = 150 * time.Millisecond
)

func newTTY(w io.Writer, size func() (int, int, error)) *tty {
	t := &tty{w: w, size: size, now: time.Now, done: make(chan struct{})}
	t.start = t.now()
	t.stopped.Add(1)
	go func() {
		defer t.stopped.Done()
		tick := time.NewTicker(redraw)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				t.draw(false)
			case <-t.done:
				t.draw(true)
				return
			}
		}
	}()
	return t
}

func (t *tty) Start(name string) func(string, error) {
	t.mu.Lock()
	s := &step{name: oneLine(name), start: t.now()}
	t.steps = append(t.steps, s)
	t.mu.Unlock()
	return func(note string, err error) {
		t.mu.Lock()
		s.end, s.note, s.err, s.finished = t.now(), oneLine(note), err, true
		t.mu.Unlock()
	}
}

func (t *tty) Warn(format string, args ...any) {
	msg := lines(fmt.Sprintf(format, args...))
	msg[0] = "warning: " + msg[0]
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		// No view is left to print above.
		io.WriteString(t.w, strings.Join(msg, "\n")+"\n")
		return
	}
	t.pending = append(t.pending, msg...)
}

func (t *tty) Result(any)           {}
func (t *tty) Fail(err error) error { return err }

// Close draws the final view and stops redrawing.
func (t *tty) Close() {
	t.once.Do(func() { close(t.done) })
	t.stopped.Wait()
}

func (t *tty) draw(final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	io.WriteString(t.w, t.frame(final))
	t.closed = final
}

// frame returns the bytes that replace the view on screen: back to the
// view's top row, clear to the end of the screen, pending warnings, the
// new view. Callers hold t.mu.
func (t *tty) frame(final bool) string {
	cols, rows, err := t.size()
	if err != nil || cols <= 0 || rows <= 0 {
		cols, rows = defaultCols, defaultRows
	}
	var b strings.Builder
	if t.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", t.lines)
	}
	b.WriteString("\r\x1b[J")
	for _, l := range t.pending {
		b.WriteString(l + "\n")
	}
	t.pending = nil
	view := t.view(cols, rows, final)
	for _, l := range view {
		b.WriteString(l + "\n")
	}
	t.lines = len(view)
	return b.String()
}

// view lays out the steps for a terminal of cols x rows. A live view
// keeps to rows-1 lines: the newline after a full screen's last row
// scrolls the top row into the scrollback, beyond the reach of the next
// redraw, and each frame would leave a copy there. Lines keep to cols-1
// cells, since some terminals wrap as soon as the last column is written,
// which would shift every later redraw by a row. The final view is
// printed once, so it lists every step.
func (t *tty) view(cols, rows int, final bool) []string {
	cols = min(cols-1, maxCols)
	now := t.now()
	finished := 0
	for _, s := range t.steps {
		if s.finished {
			finished++
		}
	}
	header := clip(fmt.Sprintf("[+] Building %.1fs (%d/%d)", now.Sub(t.start).Seconds(), finished, len(t.steps)), cols)
	if final {
		out := []string{header}
		for _, s := range t.steps {
			out = append(out, stepLine(s, now, cols))
		}
		return out
	}
	if rows-1 < 1 {
		return nil
	}
	out := []string{header}
	room := rows - 2 // rows for steps below the header
	if len(t.steps) <= room {
		for _, s := range t.steps {
			out = append(out, stepLine(s, now, cols))
		}
		return out
	}
	if room < 1 {
		return out
	}
	shown := t.pick(room - 1) // one row says what is left out
	hiddenRunning := 0
	for i, s := range t.steps {
		if slices.Contains(shown, i) {
			out = append(out, stepLine(s, now, cols))
		} else if !s.finished {
			hiddenRunning++
		}
	}
	hidden := len(t.steps) - len(shown)
	return append(out, clip(fmt.Sprintf(" => ... %d more steps: %d running, %d finished", hidden, hiddenRunning, hidden-hiddenRunning), cols))
}

// pick chooses n steps to show, in the order they started: failed ones
// first, then running ones (the oldest, which the user is waiting on),
// then the most recently finished.
func (t *tty) pick(n int) []int {
	var failed, running, finished []int
	for i, s := range t.steps {
		switch {
		case s.err != nil && !canceled(s.err):
			failed = append(failed, i)
		case !s.finished:
			running = append(running, i)
		default:
			finished = append(finished, i)
		}
	}
	slices.SortStableFunc(finished, func(a, b int) int { return t.steps[b].end.Compare(t.steps[a].end) })
	chosen := slices.Concat(failed, running, finished)
	chosen = chosen[:min(n, len(chosen))]
	slices.Sort(chosen)
	return chosen
}

// stepLine renders one step with its time right-aligned at cols,
// shortening the name when the line would not fit.
func stepLine(s *step, now time.Time, cols int) string {
	label := s.name
	took := now.Sub(s.start)
	switch {
	case s.finished && canceled(s.err):
		label, took = "CANCELED "+label, s.end.Sub(s.start)
	case s.finished && s.err != nil:
		label, took = "ERROR "+label, s.end.Sub(s.start)
	case s.finished:
		if s.note != "" {
			label += " [" + s.note + "]"
		}
		took = s.end.Sub(s.start)
	}
	const prefix = " => "
	dur := fmt.Sprintf("%.1fs", took.Seconds())
	room := cols - cells(prefix) - cells(dur) - 1
	label = clip(label, room)
	gap := max(room-cells(label), 0) + 1
	return clip(prefix+label+strings.Repeat(" ", gap)+dur, cols)
}

// clip shortens s to at most n terminal cells, marking the cut with "…".
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if cells(s) <= n {
		return s
	}
	used := 0
	for i, r := range s {
		if used+runeCells(r) > n-1 {
			return s[:i] + "…"
		}
		used += runeCells(r)
	}
	return s
}

func cells(s string) int {
	n := 0
	for _, r := range s {
		n += runeCells(r)
	}
	return n
}

// runeCells is the width of r on a terminal: two cells for East Asian
// wide and full-width characters, one for the rest.
func runeCells(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
