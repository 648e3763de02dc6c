package artifact

import (
	"bytes"
	"strings"
)

// cLines reads C source for its directives as the preprocessor's first
// phases leave it: a backslash at a line's end joins it to the next
// (white space between them allowed, as gcc allows it), and a comment is
// a space, "/*" and "//" in a string or character literal no comment. A
// line was read as it was written: #include "x.h" in a comment, or below
// "// note \" on the line before, was followed, and #include MACRO there
// had the key take every file of every search directory; an #include
// split by a backslash was not seen at all. It is fed the source in
// pieces of any size and gives emit each logical line that starts with
// "#" (comments blanked; one longer than maxDirectiveLine is dropped, a
// table, not a directive).
//
// A literal it misreads (a C++14 digit separator, 1'000, taken for a
// character's quote) ends with its line, and can only hide a comment's
// start from it: it then follows an include gcc skips, never the other
// way round.
type cLines struct {
	emit  func(line []byte)
	state cState
	// lead: the logical line has had nothing but white space and
	// comments; directive: its first character was '#'.
	lead, directive bool
	line            []byte
	over            bool
	// slash: code's last character was '/', held to see whether a
	// comment starts; star: a block comment's last was '*'; esc: a
	// literal's last was a backslash.
	slash, star, esc bool
	// held is the count of white-space bytes after a backslash held to
	// see whether a newline follows, -1 for none.
	held int
	// identLen is the length of the identifier just before, tail its
	// last bytes: R, u8R, uR, UR or LR before '"' starts a raw string.
	identLen int
	tail     [3]byte
	// delim is a raw string's delimiter; match how much of ")delim"
	// its body has just had, -1 for none.
	delim []byte
	match int
}

type cState uint8

const (
	cCode cState = iota
	cBlockComment
	cLineComment
	cString // quote is '"'
	cChar   // quote is '\''
	cRawDelim
	cRawBody
)

// newCLines is a cLines that gives emit its directives.
func newCLines(emit func(line []byte)) *cLines {
	return &cLines{emit: emit, lead: true, held: -1}
}

// feed reads the next piece of the source. What no byte of changes
// (code off a directive line, a comment's text) is skipped to the next
// that may: byte by byte, a header was read at a tenth of the speed.
func (c *cLines) feed(p []byte) {
	for len(p) > 0 {
		if c.held < 0 && !c.slash {
			var stop string
			switch {
			case c.state == cCode && !c.lead && !c.directive:
				stop = "/\"'\\\n"
			case c.state == cBlockComment && !c.star:
				stop = "*\\\n"
			case c.state == cLineComment:
				stop = "\\\n"
			}
			if stop != "" {
				i := bytes.IndexAny(p, stop)
				if i < 0 {
					i = len(p)
				}
				if c.state == cCode {
					c.skipped(p[:i])
				}
				if p = p[i:]; len(p) == 0 {
					return
				}
			}
		}
		c.byte(p[0])
		p = p[1:]
	}
}

// skipped follows the identifier of the code s, skipped.
func (c *cLines) skipped(s []byte) {
	k := 0
	for k < len(s) && isIdentByte(s[len(s)-1-k]) {
		k++
	}
	if k < len(s) {
		c.identLen = 0
	}
	c.identLen += k
	for _, b := range s[len(s)-min(k, 3):] {
		c.tail[0], c.tail[1], c.tail[2] = c.tail[1], c.tail[2], b
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// finish ends the source: what is held is read as it is.
func (c *cLines) finish() {
	if c.held >= 0 {
		c.flushHeld()
	}
	c.endLine()
}

func (c *cLines) byte(b byte) {
	// A raw string takes its text as written: no backslash joins lines.
	if c.state == cRawDelim || c.state == cRawBody {
		c.raw(b)
		return
	}
	if c.held >= 0 {
		switch b {
		case ' ', '\t', '\f', '\v', '\r':
			c.held++
			return
		case '\n':
			c.held = -1
			return
		}
		c.flushHeld()
	}
	switch b {
	case '\\':
		c.held = 0
	case '\n':
		c.newline()
	default:
		c.step(b)
	}
}

// flushHeld reads a held backslash, and the white space after it, as
// text: no newline followed.
func (c *cLines) flushHeld() {
	n := c.held
	c.held = -1
	c.step('\\')
	if n > 0 {
		c.step(' ')
	}
}

// newline ends a physical line: the logical one too, but in a block
// comment, which goes on as one space.
func (c *cLines) newline() {
	switch c.state {
	case cBlockComment:
		c.star = false
		return
	case cRawDelim, cRawBody:
		return
	case cCode:
		if c.slash {
			c.slash = false
			c.put('/')
		}
	}
	c.state, c.esc = cCode, false
	c.endLine()
}

func (c *cLines) endLine() {
	if c.slash {
		c.slash = false
		c.put('/')
	}
	if c.directive && !c.over {
		c.emit(c.line)
	}
	c.line, c.lead, c.directive, c.over, c.identLen = c.line[:0], true, false, false, 0
}

func (c *cLines) step(b byte) {
	switch c.state {
	case cBlockComment:
		if c.star && b == '/' {
			c.state = cCode
		}
		c.star = b == '*'
		return
	case cLineComment:
		return
	case cString, cChar:
		c.put(b)
		switch {
		case c.esc:
			c.esc = false
		case b == '\\':
			c.esc = true
		case b == '"' && c.state == cString, b == '\'' && c.state == cChar:
			c.state = cCode
		}
		return
	}
	if c.slash {
		c.slash = false
		switch b {
		case '*':
			c.state, c.star = cBlockComment, false
			c.put(' ')
			return
		case '/':
			c.state = cLineComment
			c.put(' ')
			return
		}
		c.put('/')
		c.identLen = 0
	}
	switch {
	case b == '/':
		c.slash = true
		return
	case b == '"' && c.rawPrefix():
		c.state, c.delim = cRawDelim, c.delim[:0]
	case b == '"':
		c.state = cString
	case b == '\'':
		c.state = cChar
	}
	if isIdentByte(b) {
		c.identLen++
		c.tail[0], c.tail[1], c.tail[2] = c.tail[1], c.tail[2], b
	} else {
		c.identLen = 0
	}
	c.put(b)
}

// rawPrefix says whether the identifier just before is a raw string's
// prefix.
func (c *cLines) rawPrefix() bool {
	if c.identLen == 0 || c.identLen > 3 {
		return false
	}
	prefix := string(c.tail[3-c.identLen:])
	return prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR"
}

// raw reads a byte of a raw string, R"delim(...)delim": a delimiter of
// more than 16 characters, or one gcc refuses, fails the compile, and is
// read as a plain string's start.
func (c *cLines) raw(b byte) {
	if c.state == cRawDelim {
		switch {
		case b == '(':
			c.state, c.match = cRawBody, -1
		case len(c.delim) == 16 || b == ' ' || b == ')' || b == '\\' || b == '\t' || b == '\v' || b == '\f' || b == '\n':
			c.state = cString
			c.byte(b)
			return
		default:
			c.delim = append(c.delim, b)
		}
		c.put(b)
		return
	}
	if b != '\n' {
		c.put(b)
	}
	switch {
	case c.match == len(c.delim) && b == '"':
		c.state, c.identLen = cCode, 0
	case c.match >= 0 && c.match < len(c.delim) && b == c.delim[c.match]:
		c.match++
	case b == ')':
		c.match = 0
	default:
		c.match = -1
	}
}

// put adds b to the logical line, if it is a directive.
func (c *cLines) put(b byte) {
	if c.lead {
		switch b {
		case ' ', '\t', '\f', '\v', '\r':
			return
		}
		c.lead, c.directive = false, b == '#'
	}
	if !c.directive || c.over {
		return
	}
	if len(c.line) >= maxDirectiveLine {
		c.over, c.line = true, nil
		return
	}
	c.line = append(c.line, b)
}

// ifZero follows the directives of a source for the groups below #if 0,
// which gcc skips, whatever they include: #if 0 alone, whose value needs
// no macro, not guessed at for any other condition.
type ifZero struct {
	// depth is how many conditionals are open in the group skipped, 0
	// where none is.
	depth int
}

// live reads the directive line and says whether it is outside a group
// skipped.
func (z *ifZero) live(line []byte) bool {
	rest, _ := bytes.CutPrefix(bytes.TrimSpace(line), []byte("#"))
	name, cond, _ := strings.Cut(strings.TrimSpace(string(rest)), " ")
	if i := strings.IndexAny(name, "\t\f\v\r"); i >= 0 {
		name, cond = name[:i], name[i+1:]+" "+cond
	}
	cond = strings.TrimSpace(cond)
	if z.depth == 0 {
		if name == "if" && cond == "0" {
			z.depth = 1
			return false
		}
		return true
	}
	switch name {
	case "if", "ifdef", "ifndef":
		z.depth++
	case "endif":
		z.depth--
	case "else", "elif", "elifdef", "elifndef":
		// An #elif's group may be compiled: it is not evaluated.
		if z.depth == 1 {
			z.depth = 0
		}
	}
	return false
}
