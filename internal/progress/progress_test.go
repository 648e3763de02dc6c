package progress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// clock returns a time that moves on by step at each reading.
func clock(step time.Duration) func() time.Time {
	t := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

// run drives a reporter through every kind of event.
func run(r Reporter) {
	a := r.Start("artifact a (linux/amd64)")
	b := r.Start("image a (linux/amd64)")
	c := r.Start("image b (linux/amd64)")
	a("go, cached", nil)
	b("", errors.New("go build: exit status 1\n./main.go:3: undefined: x"))
	c("", fmt.Errorf("pulling base: %w", context.Canceled))
	r.Warn("no licence for %s", "a")
}

func TestPlain(t *testing.T) {
	var buf bytes.Buffer
	r, err := New("plain", &buf)
	if err != nil {
		t.Fatal(err)
	}
	r.(*plain).now = clock(250 * time.Millisecond)
	run(r)
	r.Result("ignored")
	r.Close()
	want := []string{
		"start    artifact a (linux/amd64)",
		"start    image a (linux/amd64)",
		"start    image b (linux/amd64)",
		"done     artifact a (linux/amd64) [go, cached] 0.75s",
		"failed   image a (linux/amd64) 0.75s: go build: exit status 1",
		"    ./main.go:3: undefined: x",
		"canceled image b (linux/amd64) 0.75s",
		"warning: no licence for a",
	}
	if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("plain output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// events decodes a json stream, failing on any line that is not JSON.
func events(t *testing.T, b []byte) []Event {
	t.Helper()
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var e Event
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q is not an event: %v", sc.Text(), err)
		}
		if e.Time.IsZero() {
			t.Errorf("event %q has no time", sc.Text())
		}
		out = append(out, e)
	}
	return out
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	r, err := New("json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	run(r)
	r.Result(map[string][]string{"digests": {"sha256:aa"}})
	r.Close()
	ev := events(t, buf.Bytes())
	var kinds []string
	for _, e := range ev {
		kinds = append(kinds, e.Event+":"+e.Status)
	}
	want := []string{"start:", "start:", "start:", "end:done", "end:failed", "end:canceled", "warning:", "result:"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if e := ev[3]; e.Step != "artifact a (linux/amd64)" || e.Note != "go, cached" || e.Seconds == nil || e.Error != "" {
		t.Errorf("done event %+v", e)
	}
	if e := ev[4]; e.Error != "go build: exit status 1\n./main.go:3: undefined: x" || e.Seconds == nil {
		t.Errorf("failed event %+v", e)
	}
	if e := ev[5]; e.Error != "pulling base: context canceled" {
		t.Errorf("canceled event %+v", e)
	}
	if ev[6].Message != "no licence for a" {
		t.Errorf("warning event %+v", ev[6])
	}
	if got := fmt.Sprint(ev[7].Result); got != "map[digests:[sha256:aa]]" {
		t.Errorf("result %s", got)
	}
}

func TestJSONFailure(t *testing.T) {
	var buf bytes.Buffer
	r, _ := New("json", &buf)
	if r.Fail(nil) != nil {
		t.Error("Fail(nil) is not nil")
	}
	cause := errors.New("boom")
	err := r.Fail(cause)
	var f Failure
	if !errors.As(err, &f) || !errors.Is(err, cause) || err.Error() != "boom" {
		t.Fatalf("Fail returned %#v", err)
	}
	r.Close()
	f.Report("interrupted")
	// A result that cannot be encoded still leaves a JSON stream.
	r.Result(map[string]any{"c": make(chan int)})
	ev := events(t, buf.Bytes())
	if len(ev) != 2 || ev[0].Event != "error" || ev[0].Error != "interrupted" || ev[1].Event != "error" || !strings.Contains(ev[1].Error, "result") {
		t.Fatalf("events %+v", ev)
	}
}

func TestOtherModesPassFailuresThrough(t *testing.T) {
	cause := errors.New("boom")
	for _, mode := range []string{"plain", "tty", "quiet"} {
		var buf bytes.Buffer
		r, _ := New(mode, &buf)
		err := r.Fail(cause)
		r.Result("x")
		r.Close()
		var f Failure
		if err != cause || errors.As(err, &f) {
			t.Errorf("%s: Fail returned %#v", mode, err)
		}
		if strings.Contains(buf.String(), "x\n") {
			t.Errorf("%s printed the result: %q", mode, buf.String())
		}
	}
}

func TestTTY(t *testing.T) {
	var buf bytes.Buffer
	r, _ := New("tty", &buf)
	run(r)
	r.Close()
	r.Warn("after %s", "close")
	out := buf.String()
	for _, want := range []string{"[+] Building", "(3/3)", "=> artifact a (linux/amd64) [go, cached]", "=> ERROR image a (linux/amd64)", "=> CANCELED image b (linux/amd64)", "warning: no licence for a\n", "warning: after close\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("tty output lacks %q:\n%s", want, out)
		}
	}
	if _, err := New("fancy", &buf); err == nil {
		t.Error("unknown mode accepted")
	}
}

// TestTTYKeepsToTheTerminal drives the tty view on a 40x10 terminal with
// more steps than rows and names longer than a row: the redraws must
// never wrap a line nor push a frame into the scrollback, and the final
// view must leave every step on record exactly once.
func TestTTYKeepsToTheTerminal(t *testing.T) {
	scr := newScreen(40, 10)
	tt := &tty{w: scr, size: scr.size, now: clock(10 * time.Millisecond)}
	tt.start = tt.now()
	var ends []func(string, error)
	for i := range 30 {
		ends = append(ends, tt.Start(fmt.Sprintf("artifact number-%02d with a long name (linux/amd64)", i)))
		tt.draw(false)
	}
	for i, end := range ends {
		switch {
		case i == 7:
			end("", errors.New("exit status 1"))
		case i > 20:
			end("", context.Canceled)
		case i%2 == 0:
			end("cached", nil)
		}
		if i == 12 {
			tt.Warn("a warning\nof two lines")
		}
		tt.draw(false)
	}
	if len(scr.scrollback) != 2 || scr.scrollback[0] != "warning: a warning" || scr.scrollback[1] != "of two lines" {
		t.Errorf("the live view flooded the scrollback: %q", scr.scrollback)
	}
	if scr.wraps != 0 {
		t.Errorf("%d characters wrapped", scr.wraps)
	}
	view := scr.lines()
	if len(view) > 9 {
		t.Errorf("live view of %d rows on a 10-row terminal:\n%s", len(view), strings.Join(view, "\n"))
	}
	if !strings.Contains(strings.Join(view, "\n"), "ERROR artifact number-07") {
		t.Errorf("the failed step is not in view:\n%s", strings.Join(view, "\n"))
	}
	for _, l := range view {
		if len([]rune(l)) > 39 {
			t.Errorf("line %q is wider than 39 cells", l)
		}
	}

	tt.draw(true)
	all := strings.Join(append(scr.scrollback, scr.lines()...), "\n")
	for i := range 30 {
		name := fmt.Sprintf("number-%02d", i)
		if n := strings.Count(all, name); n != 1 {
			t.Errorf("%s appears %d times after the final view:\n%s", name, n, all)
		}
	}
	if scr.wraps != 0 {
		t.Errorf("%d characters wrapped in the final view", scr.wraps)
	}
}

// TestTTYFollowsResize reads the size at every frame.
func TestTTYFollowsResize(t *testing.T) {
	scr := newScreen(60, 20)
	tt := &tty{w: scr, size: scr.size, now: clock(time.Millisecond)}
	tt.Start(strings.Repeat("x", 100))
	tt.draw(false)
	if l := scr.lines()[1]; cells(l) != 59 {
		t.Fatalf("line %q at 60 columns", l)
	}
	scr.cols = 30
	tt.draw(false)
	if l := scr.lines()[1]; cells(l) != 29 || !strings.HasSuffix(l, "s") {
		t.Fatalf("line %q after resizing to 30 columns", l)
	}
}

func TestStepLine(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Second)
	done := &step{name: "artifact a (linux/amd64)", start: t0, end: t0.Add(1500 * time.Millisecond), note: "cached", finished: true}
	for _, c := range []struct {
		s    *step
		cols int
		want string
	}{
		{done, 50, " => artifact a (linux/amd64) [cached]         1.5s"},
		{done, 30, " => artifact a (linux/am… 1.5s"},
		{&step{name: "image a", start: t0}, 20, " => image a     3.0s"},
		{&step{name: "image a", start: t0, end: t0.Add(time.Second), err: errors.New("x"), finished: true}, 24, " => ERROR image a   1.0s"},
		{&step{name: "image a", start: t0, end: t0.Add(time.Second), err: context.Canceled, finished: true}, 24, " => CANCELED image… 1.0s"},
		{&step{name: "图像 a", start: t0}, 12, " => 图… 3.0s"},
		{done, 5, " => …"},
	} {
		if got := stepLine(c.s, now, c.cols); got != c.want {
			t.Errorf("%d columns: %q, want %q", c.cols, got, c.want)
		}
		if got := stepLine(c.s, now, c.cols); cells(got) > c.cols {
			t.Errorf("%q is wider than %d cells", got, c.cols)
		}
	}
}

// TestTTYPicks shows, when steps outnumber rows, the failed and running
// steps and then the latest finished, in the order they started, and
// says how many are left out.
func TestTTYPicks(t *testing.T) {
	tt := &tty{size: func() (int, int, error) { return 80, 8, nil }, now: clock(time.Second)}
	tt.start = tt.now()
	var ends []func(string, error)
	for i := range 12 {
		ends = append(ends, tt.Start(fmt.Sprintf("s%02d", i)))
	}
	for i, end := range ends {
		switch i {
		case 2:
			end("", errors.New("boom"))
		case 5, 9, 10:
		default:
			end("", nil)
		}
	}
	view := tt.view(80, 8, false)
	var names []string
	for _, l := range view[1 : len(view)-1] {
		names = append(names, strings.Fields(l)[len(strings.Fields(l))-2])
	}
	if want := []string{"s02", "s05", "s09", "s10", "s11"}; !slices.Equal(names, want) {
		t.Errorf("shown %v, want %v:\n%s", names, want, strings.Join(view, "\n"))
	}
	if last := view[len(view)-1]; last != " => ... 7 more steps: 0 running, 7 finished" {
		t.Errorf("summary %q", last)
	}
	if len(tt.view(80, 8, true)) != 13 {
		t.Errorf("final view does not list every step")
	}
}

func TestAutoIsPlainOffTerminal(t *testing.T) {
	// /dev/null is a character device but no terminal.
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("TERM", "xterm")
	for _, w := range []any{f, &bytes.Buffer{}} {
		r, err := New("auto", w.(interface{ Write([]byte) (int, error) }))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.(*plain); !ok {
			t.Errorf("auto on %T chose %T", w, r)
		}
		r.Close()
	}
}
