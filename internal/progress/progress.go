// Package progress reports the steps of a build as they start and finish:
// one line per start and end (plain), one JSON object per event (json), or
// a live view of running and finished steps redrawn in place on a terminal
// (tty), in the manner of buildx.
package progress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"golang.org/x/term"
)

// Reporter receives build events. Implementations are safe for concurrent use.
type Reporter interface {
	// Start marks the beginning of a step; the returned function ends it
	// with an optional note ("cached") and the step's error.
	Start(name string) func(note string, err error)
	// Warn reports something the user should know that does not stop the build.
	Warn(format string, args ...any)
	// Result reports what the command produced (digests, references). In
	// json mode it is the last event, {"event":"result","result":v}, so v
	// must marshal to JSON; the other modes ignore it.
	Result(v any)
	// Fail hands err, the command's failure, to the reporter for its final
	// report: in json mode the returned error is a [Failure] whose Report
	// writes an error event, so that no plain text reaches a JSON stream;
	// the other modes return err as it is. Fail(nil) is nil.
	Fail(err error) error
	// Close flushes the display.
	Close()
}

// Failure is an error whose final report belongs to the reporter that
// marked it (see Reporter.Fail): the command's entry point passes Report
// the one line it would otherwise print on stderr.
type Failure interface {
	error
	Report(msg string)
}

// New returns the reporter for mode ("auto", "tty", "plain", "json",
// "quiet") writing to w. "auto" is tty when w is a terminal (and TERM is
// not "dumb"), else plain.
func New(mode string, w io.Writer) (Reporter, error) {
	switch mode {
	case "auto", "":
		if isTerminal(w) {
			return newTTY(w, terminalSize(w)), nil
		}
		return &plain{w: w}, nil
	case "tty":
		return newTTY(w, terminalSize(w)), nil
	case "plain":
		return &plain{w: w}, nil
	case "json":
		return newJSON(w), nil
	case "quiet":
		return quiet{}, nil
	}
	return nil, Check(mode)
}

// Check says whether New takes mode, without making a reporter (a tty's
// redraws itself until closed).
func Check(mode string) error {
	switch mode {
	case "auto", "", "tty", "plain", "json", "quiet":
		return nil
	}
	return fmt.Errorf("--progress %q: want auto, tty, plain, json or quiet", mode)
}

// isTerminal asks the terminal driver itself: a character device such as
// /dev/null is no terminal, and redrawing into a file or pipe would fill
// it with escape sequences.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// terminalSize returns a function reading w's size at each frame, so a
// resized window is followed; 80x24 stands in when w is no terminal
// (--progress tty into a pipe).
func terminalSize(w io.Writer) func() (int, int, error) {
	f, ok := w.(*os.File)
	return func() (int, int, error) {
		if !ok {
			return 0, 0, errors.New("not a terminal")
		}
		return term.GetSize(int(f.Fd()))
	}
}

// canceled tells a step stopped because the build was cancelled (another
// step failed, or the user pressed Ctrl-C) from one that failed itself.
func canceled(err error) bool {
	return errors.Is(err, context.Canceled)
}

// oneLine replaces control characters (a newline in a recipe name, an
// escape sequence in an error) so that one event stays on one line and
// cannot move the cursor.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// lines splits a message that may span lines (a compiler's output in an
// error) into single lines free of control characters.
func lines(s string) []string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, p := range parts {
		parts[i] = oneLine(strings.TrimSuffix(p, "\r"))
	}
	return parts
}

type quiet struct{}

func (quiet) Start(string) func(string, error) { return func(string, error) {} }
func (quiet) Warn(string, ...any)              {}
func (quiet) Result(any)                       {}
func (quiet) Fail(err error) error             { return err }
func (quiet) Close()                           {}
