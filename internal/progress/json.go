package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Event is one line of --progress json. Every line is one Event; a
// successful command's last event is "result", a failed one's "error".
type Event struct {
	Time time.Time `json:"time"`
	// Event is start, end, warning, result or error.
	Event string `json:"event"`
	// Step names the step of a start or end event.
	Step string `json:"step,omitempty"`
	// Status is the outcome of an end event: done, failed or canceled.
	Status string `json:"status,omitempty"`
	// Seconds is how long the step of an end event took.
	Seconds *float64 `json:"seconds,omitempty"`
	// Note qualifies a done step ("cached").
	Note string `json:"note,omitempty"`
	// Error is the message of a failed or canceled step, or of the
	// command's failure (error event).
	Error string `json:"error,omitempty"`
	// Message is the text of a warning.
	Message string `json:"message,omitempty"`
	// Result is what the command produced (result event).
	Result any `json:"result,omitempty"`
}

type jsonReporter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

func newJSON(w io.Writer) *jsonReporter {
	return &jsonReporter{w: w, now: time.Now}
}

// emit writes e as one line. An event that does not marshal (a result
// holding a channel) becomes an error event: the stream stays JSON.
func (j *jsonReporter) emit(e Event) {
	e.Time = j.now().UTC()
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(Event{Time: e.Time, Event: "error", Error: fmt.Sprintf("encoding the %s event: %v", e.Event, err)})
	}
	j.mu.Lock()
	j.w.Write(append(b, '\n'))
	j.mu.Unlock()
}

func (j *jsonReporter) Start(name string) func(string, error) {
	start := j.now()
	j.emit(Event{Event: "start", Step: name})
	return func(note string, err error) {
		took := j.now().Sub(start).Seconds()
		e := Event{Event: "end", Step: name, Status: "done", Seconds: &took, Note: note}
		switch {
		case canceled(err):
			e.Status, e.Error = "canceled", err.Error()
		case err != nil:
			e.Status, e.Error = "failed", err.Error()
		}
		j.emit(e)
	}
}

func (j *jsonReporter) Warn(format string, args ...any) {
	j.emit(Event{Event: "warning", Message: fmt.Sprintf(format, args...)})
}

func (j *jsonReporter) Result(v any) {
	j.emit(Event{Event: "result", Result: v})
}

func (j *jsonReporter) Fail(err error) error {
	if err == nil {
		return nil
	}
	return &jsonFailure{err: err, j: j}
}

func (j *jsonReporter) Close() {}

// jsonFailure carries the command's error to the entry point, which
// decides the words (a signal reads "interrupted") and hands them back to
// be written as the stream's error event.
type jsonFailure struct {
	err error
	j   *jsonReporter
}

func (f *jsonFailure) Error() string     { return f.err.Error() }
func (f *jsonFailure) Unwrap() error     { return f.err }
func (f *jsonFailure) Report(msg string) { f.j.emit(Event{Event: "error", Error: msg}) }
