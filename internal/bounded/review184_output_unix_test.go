//go:build unix

package bounded

import (
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// A real command's stdout and stderr, two pipes copied by two
// goroutines, write into one Output at once: every byte is counted, kept
// or said left out (run with -race).
func TestReview184OutputCommandStdoutAndStderr(t *testing.T) {
	const each = 3 << 20
	o := &Output{Max: 1 << 10}
	cmd := exec.Command("sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' o & head -c %d /dev/zero | tr '\\0' e >&2; wait", each, each))
	// Two writers that are not equal, so exec copies each pipe in its own
	// goroutine rather than sharing one descriptor.
	cmd.Stdout, cmd.Stderr = o, struct{ io.Writer }{o}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !o.Over() {
		t.Fatal("Over is false after 6 MiB into a Max of 1 KiB")
	}
	s := o.String()
	m := regexp.MustCompile(`\n\.\.\. (\d+) bytes left out \.\.\.\n`).FindStringSubmatchIndex(s)
	if m == nil {
		t.Fatalf("String does not say what was left out: %.200q", s)
	}
	left, _ := strconv.Atoi(s[m[2]:m[3]])
	head, tail := s[:m[0]], s[m[1]:]
	if len(head) != o.Max || len(tail) != o.Max {
		t.Errorf("kept %d bytes at the head and %d at the tail, want %d of each", len(head), len(tail), o.Max)
	}
	if got := len(head) + left + len(tail); got != 2*each {
		t.Errorf("head, left out and tail are %d bytes, the command wrote %d", got, 2*each)
	}
	if regexp.MustCompile(`[^oe]`).MatchString(head + tail) {
		t.Error("kept bytes the command did not write")
	}
}
