package progress

import (
	"strconv"
	"strings"
	"sync"
)

// screen is a terminal of cols x rows cells, enough of one to check what
// the tty reporter leaves on screen and in the scrollback: it follows
// CR, LF (as a tty's ONLCR output does, back to column 0), cursor up
// (CSI n A), erase line (CSI 2 K) and erase below (CSI J), and wraps a
// character written past the last column to the next row, as terminals do.
type screen struct {
	mu         sync.Mutex
	cols, rows int
	grid       [][]rune
	row, col   int
	scrollback []string // rows scrolled off the top, oldest first
	wraps      int      // characters that did not fit their row
}

func newScreen(cols, rows int) *screen {
	s := &screen{cols: cols, rows: rows}
	for range rows {
		s.grid = append(s.grid, nil)
	}
	return s
}

func (s *screen) size() (int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cols, s.rows, nil
}

func (s *screen) newline() {
	s.col = 0
	if s.row < s.rows-1 {
		s.row++
		return
	}
	s.scrollback = append(s.scrollback, string(s.grid[0]))
	s.grid = append(s.grid[1:], nil)
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := []rune(string(p))
	for i := 0; i < len(in); i++ {
		r := in[i]
		switch {
		case r == '\r':
			s.col = 0
		case r == '\n':
			s.newline()
		case r == 0x1b && i+1 < len(in) && in[i+1] == '[':
			j := i + 2
			for j < len(in) && (in[j] >= '0' && in[j] <= '9') {
				j++
			}
			n, _ := strconv.Atoi(string(in[i+2 : j]))
			switch in[j] {
			case 'A':
				s.row = max(s.row-max(n, 1), 0)
			case 'K':
				s.grid[s.row] = nil
			case 'J':
				s.grid[s.row] = s.grid[s.row][:min(s.col, len(s.grid[s.row]))]
				for k := s.row + 1; k < s.rows; k++ {
					s.grid[k] = nil
				}
			}
			i = j
		default:
			if s.col >= s.cols {
				s.wraps++
				s.newline()
			}
			line := s.grid[s.row]
			for len(line) <= s.col {
				line = append(line, ' ')
			}
			line[s.col] = r
			s.grid[s.row] = line
			s.col++
		}
	}
	return len(p), nil
}

// lines returns the screen's non-empty rows.
func (s *screen) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.grid {
		if t := strings.TrimRight(string(l), " "); t != "" {
			out = append(out, t)
		}
	}
	return out
}
