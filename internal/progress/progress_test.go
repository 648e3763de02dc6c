package progress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func run(r Reporter) {
	done := r.Start("artifact a (linux/amd64)")
	done("go, cached", nil)
	r.Start("image a (linux/amd64)")("", errors.New("boom"))
	r.Warn("no licence for %s", "a")
	r.Close()
}

func TestPlain(t *testing.T) {
	var buf bytes.Buffer
	r, _ := New("plain", &buf)
	run(r)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per finished step and one warning, got %q", lines)
	}
	if !regexp.MustCompile(`^artifact a \(linux/amd64\) \[go, cached\] +\d+\.\d\ds$`).MatchString(lines[0]) {
		t.Errorf("step line %q", lines[0])
	}
	if lines[1] != "warning: no licence for a" {
		t.Errorf("warning line %q", lines[1])
	}
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	r, _ := New("json", &buf)
	run(r)
	var events []Event
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	want := []string{"started", "done", "started", "error", "warning"}
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d", len(events), len(want))
	}
	for i, e := range events {
		if e.Status != want[i] || e.Time.IsZero() {
			t.Errorf("event %d: %+v, want status %s", i, e, want[i])
		}
	}
	if events[1].Note != "go, cached" || events[3].Message != "boom" {
		t.Errorf("events %+v", events)
	}
}

func TestTTY(t *testing.T) {
	var buf bytes.Buffer
	r, _ := New("tty", &buf)
	run(r)
	out := buf.String()
	for _, want := range []string{"[+] Building", "(2/2)", "=> artifact a (linux/amd64) [go, cached]", "=> ERROR image a (linux/amd64)", "warning: no licence for a"} {
		if !strings.Contains(out, want) {
			t.Errorf("tty output lacks %q:\n%s", want, out)
		}
	}
	if _, err := New("fancy", &buf); err == nil {
		t.Error("unknown mode accepted")
	}
}
