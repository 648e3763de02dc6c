// Package progress reports the steps of a build as they start and finish:
// one line per finished step (plain), one JSON object per event (json), or
// a live view of running and finished steps on a terminal (tty), in the
// manner of buildx.
package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Reporter receives build events. Implementations are safe for concurrent use.
type Reporter interface {
	// Start marks the beginning of a step; the returned function ends it
	// with an optional note ("cached") and the step's error.
	Start(name string) func(note string, err error)
	// Warn reports something the user should know that does not stop the build.
	Warn(format string, args ...any)
	// Close flushes the display.
	Close()
}

// New returns the reporter for mode ("auto", "tty", "plain", "json",
// "quiet") writing to w. "auto" is tty when w is a terminal, else plain.
func New(mode string, w io.Writer) (Reporter, error) {
	switch mode {
	case "auto", "":
		if isTerminal(w) {
			return newTTY(w), nil
		}
		return &plain{w: w}, nil
	case "tty":
		return newTTY(w), nil
	case "plain":
		return &plain{w: w}, nil
	case "json":
		return &jsonReporter{enc: json.NewEncoder(w)}, nil
	case "quiet":
		return quiet{}, nil
	}
	return nil, fmt.Errorf("--progress %q: want auto, tty, plain, json or quiet", mode)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

type quiet struct{}

func (quiet) Start(string) func(string, error) { return func(string, error) {} }
func (quiet) Warn(string, ...any)              {}
func (quiet) Close()                           {}

// plain prints one line per finished step.
type plain struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *plain) Start(name string) func(string, error) {
	start := time.Now()
	return func(note string, err error) {
		if err != nil {
			return // the error itself is reported by the caller
		}
		if note != "" {
			name += " [" + note + "]"
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "%-60s %6.2fs\n", name, time.Since(start).Seconds())
		p.mu.Unlock()
	}
}

func (p *plain) Warn(format string, args ...any) {
	p.mu.Lock()
	fmt.Fprintf(p.w, "warning: "+format+"\n", args...)
	p.mu.Unlock()
}

func (p *plain) Close() {}

// Event is one line of --progress json.
type Event struct {
	Time    time.Time `json:"time"`
	Step    string    `json:"step,omitempty"`
	Status  string    `json:"status"` // started, done, error, warning
	Seconds float64   `json:"seconds,omitempty"`
	Note    string    `json:"note,omitempty"`
	Message string    `json:"message,omitempty"`
}

type jsonReporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (j *jsonReporter) emit(e Event) {
	j.mu.Lock()
	j.enc.Encode(e)
	j.mu.Unlock()
}

func (j *jsonReporter) Start(name string) func(string, error) {
	start := time.Now()
	j.emit(Event{Time: start.UTC(), Step: name, Status: "started"})
	return func(note string, err error) {
		e := Event{Time: time.Now().UTC(), Step: name, Status: "done", Seconds: time.Since(start).Seconds(), Note: note}
		if err != nil {
			e.Status, e.Message = "error", err.Error()
		}
		j.emit(e)
	}
}

func (j *jsonReporter) Warn(format string, args ...any) {
	j.emit(Event{Time: time.Now().UTC(), Status: "warning", Message: fmt.Sprintf(format, args...)})
}

func (j *jsonReporter) Close() {}

// tty redraws the list of steps in place a few times a second: finished
// steps with their time, running ones with a live counter.
type tty struct {
	mu       sync.Mutex
	w        io.Writer
	start    time.Time
	steps    []*step
	warnings []string
	lines    int
	done     chan struct{}
	stopped  sync.WaitGroup
	once     sync.Once
}

type step struct {
	name     string
	start    time.Time
	end      time.Time
	note     string
	failed   bool
	finished bool
}

func newTTY(w io.Writer) *tty {
	t := &tty{w: w, start: time.Now(), done: make(chan struct{})}
	t.stopped.Add(1)
	go func() {
		defer t.stopped.Done()
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				t.draw()
			case <-t.done:
				t.draw()
				return
			}
		}
	}()
	return t
}

func (t *tty) Start(name string) func(string, error) {
	s := &step{name: name, start: time.Now()}
	t.mu.Lock()
	t.steps = append(t.steps, s)
	t.mu.Unlock()
	return func(note string, err error) {
		t.mu.Lock()
		s.end, s.note, s.failed, s.finished = time.Now(), note, err != nil, true
		t.mu.Unlock()
	}
}

func (t *tty) Warn(format string, args ...any) {
	t.mu.Lock()
	t.warnings = append(t.warnings, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

func (t *tty) draw() {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	if t.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", t.lines) // back to the top of the last frame
	}
	finished := 0
	for _, s := range t.steps {
		if s.finished {
			finished++
		}
	}
	lines := []string{fmt.Sprintf("[+] Building %.1fs (%d/%d)", time.Since(t.start).Seconds(), finished, len(t.steps))}
	for _, s := range t.steps {
		switch {
		case s.failed:
			lines = append(lines, fmt.Sprintf(" => ERROR %-52s %6.1fs", s.name, s.end.Sub(s.start).Seconds()))
		case s.finished:
			name := s.name
			if s.note != "" {
				name += " [" + s.note + "]"
			}
			lines = append(lines, fmt.Sprintf(" => %-58s %6.1fs", name, s.end.Sub(s.start).Seconds()))
		default:
			lines = append(lines, fmt.Sprintf(" => %-58s %6.1fs", s.name, time.Since(s.start).Seconds()))
		}
	}
	for _, w := range t.warnings {
		lines = append(lines, "warning: "+w)
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K" + l + "\n")
	}
	t.lines = len(lines)
	io.WriteString(t.w, b.String())
}

func (t *tty) Close() {
	t.once.Do(func() { close(t.done) })
	t.stopped.Wait()
}
