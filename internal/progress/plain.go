package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// plain prints a line when a step starts and one when it ends, so a CI
// log shows what is running and a failure as soon as it happens:
//
//	start    artifact a (linux/amd64)
//	done     artifact a (linux/amd64) [cached] 0.42s
//	failed   image a (linux/amd64) 1.20s: the error
//	canceled image b (linux/amd64) 0.30s
//	warning: the message
type plain struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time // time.Now; tests fix it
}

func (p *plain) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *plain) print(s string) {
	p.mu.Lock()
	io.WriteString(p.w, s)
	p.mu.Unlock()
}

func (p *plain) Start(name string) func(string, error) {
	name = oneLine(name)
	start := p.clock()
	p.print("start    " + name + "\n")
	return func(note string, err error) {
		took := fmt.Sprintf("%.2fs", p.clock().Sub(start).Seconds())
		switch {
		case canceled(err):
			p.print("canceled " + name + " " + took + "\n")
		case err != nil:
			// A multi-line error (a compiler's output) keeps its lines,
			// indented under the step it belongs to.
			msg := lines(err.Error())
			p.print("failed   " + name + " " + took + ": " + strings.Join(msg, "\n    ") + "\n")
		default:
			if note != "" {
				name += " [" + oneLine(note) + "]"
			}
			p.print("done     " + name + " " + took + "\n")
		}
	}
}

func (p *plain) Warn(format string, args ...any) {
	p.print("warning: " + strings.Join(lines(fmt.Sprintf(format, args...)), "\n    ") + "\n")
}

func (p *plain) Result(any)           {}
func (p *plain) Fail(err error) error { return err }
func (p *plain) Close()               {}
