package dockerfile

import (
	"strings"
	"unicode/utf8"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/pallet-dev/pallet/internal/plan"
)

// locator turns BuildKit's line numbers into positions with a column.
// BuildKit's parser keeps lines only; the column of a word is found by
// looking for it in the instruction's own lines, which is exact for the
// words people write (paths, flags, names) and falls back to the
// instruction's start when a word was rewritten by the parser (JSON form).
type locator struct {
	file  string
	lines []string
}

func newLocator(file string, data []byte) *locator {
	text := strings.TrimPrefix(string(data), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return &locator{file: file, lines: strings.Split(text, "\n")}
}

func (l *locator) text(line int) string {
	if line < 1 || line > len(l.lines) {
		return ""
	}
	return l.lines[line-1]
}

// line is the position of a line's first non-blank character.
func (l *locator) line(line int) plan.Pos {
	if line <= 0 {
		return plan.Pos{File: l.file}
	}
	s := l.text(line)
	i := len(s) - len(strings.TrimLeft(s, " \t"))
	return plan.Pos{File: l.file, Line: line, Col: utf8.RuneCountInString(s[:i]) + 1}
}

// node is the position of an instruction.
func (l *locator) node(n *parser.Node) plan.Pos { return l.line(n.StartLine) }

// token is the position of word in n's lines: the first place it stands
// as a whole word after the instruction's keyword and is not a flag's
// value. "--name" finds a flag.
func (l *locator) token(n *parser.Node, word string) plan.Pos {
	if word == "" {
		return l.node(n)
	}
	for line := n.StartLine; line <= n.EndLine && line <= len(l.lines); line++ {
		s := l.text(line)
		from := 0
		if line == n.StartLine {
			// Skip the keyword, so that "COPY" never matches a path
			// named "COPY" or one of its letters.
			trimmed := strings.TrimLeft(s, " \t")
			from = len(s) - len(trimmed) + len(n.Value)
			if from > len(s) {
				from = len(s)
			}
		}
		if i := wordIndex(s, word, from); i >= 0 {
			return plan.Pos{File: l.file, Line: line, Col: utf8.RuneCountInString(s[:i]) + 1}
		}
	}
	return l.node(n)
}

// wordIndex finds word in s at or after from, standing alone: not part of
// a longer word and not after "=" (a flag's value or an assignment's).
func wordIndex(s, word string, from int) int {
	for from <= len(s) {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		before := byte(' ')
		if i > 0 {
			before = s[i-1]
		}
		after := byte(' ')
		if j := i + len(word); j < len(s) {
			after = s[j]
		}
		if strings.IndexByte(" \t\"'[,", before) >= 0 && strings.IndexByte(" \t\"',]=\\`", after) >= 0 {
			return i
		}
		from = i + 1
	}
	return -1
}

// notUTF8Flag finds, in n's own lines, a value of flag ("--exclude=") as
// written that is not valid UTF-8, and where it is: BuildKit's parser
// reads each such byte as U+FFFD, so the value it gives says nothing of
// them. A quoted value runs to its closing quote, another to a blank.
func (l *locator) notUTF8Flag(n *parser.Node, flag string) (plan.Pos, string, bool) {
	for line := n.StartLine; line <= n.EndLine && line <= len(l.lines); line++ {
		s := l.text(line)
		for from := 0; ; {
			i := strings.Index(s[from:], flag)
			if i < 0 {
				break
			}
			i += from
			from = i + len(flag)
			if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' {
				continue
			}
			v := s[from:]
			if v != "" && (v[0] == '"' || v[0] == '\'') {
				if j := strings.IndexByte(v[1:], v[0]); j >= 0 {
					v = v[1 : j+1]
				}
			} else if j := strings.IndexAny(v, " \t"); j >= 0 {
				v = v[:j]
			}
			if !utf8.ValidString(v) {
				return plan.Pos{File: l.file, Line: line, Col: utf8.RuneCountInString(s[:i]) + 1}, v, true
			}
		}
	}
	return plan.Pos{}, "", false
}
