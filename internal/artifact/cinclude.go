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
// "#" (comments blanked, runs of white space as one, cut at
// maxDirectiveLine).
//
// A literal it misreads (a C++14 digit separator, 1'000, taken for a
// character's quote) ends with its line, and can only hide a comment's
// start from it: it then follows an include gcc skips, never the other
// way round.
type cLines struct {
	emit  func(line []byte)
	state cState
	// lead: the logical line has had nothing but white space and
	// comments; directive: its first character was '#' (or the digraph
	// "%:", which gcc reads as '#': percent is its '%', held).
	lead, directive, percent bool
	line                     []byte
	over                     bool
	// slash: code's last character was '/', held to see whether a
	// comment starts; star: a block comment's last was '*'; esc: a
	// literal's last was a backslash.
	slash, star, esc bool
	// held is the count of white-space bytes after a backslash held to
	// see whether a newline follows, -1 for none.
	held int
	// cr: the last byte was a CR, ending a line; a LF after it ends
	// no other.
	cr bool
	// identLen is the length of the identifier just before, tail its
	// last bytes: R, u8R, uR, UR or LR before '"' starts a raw string.
	identLen int
	tail     [3]byte
	// delim is a raw string's delimiter; match how much of ")delim"
	// its body has just had, -1 for none.
	delim []byte
	match int
	// noRaw reads R"(...)" as an identifier and a plain string, as gcc
	// does in strict C (-std=c11) and gnu89.
	noRaw bool
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
	// cHeaderName is an include's <name>, which gcc reads to its '>'
	// as it is: <sys//types.h> holds no comment.
	cHeaderName
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
				stop = "/\"'\\\n\r"
			case c.state == cBlockComment && !c.star:
				stop = "*\\\n\r"
			case c.state == cLineComment:
				stop = "\\\n\r"
			}
			if stop != "" {
				i := bytes.IndexAny(p, stop)
				if i < 0 {
					i = len(p)
				}
				if i > 0 {
					c.cr = false
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

func isBlank(b byte) bool {
	return b == ' ' || b == '\t' || b == '\f' || b == '\v' || b == '\r'
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
	if c.cr {
		c.cr = false
		if b == '\n' {
			return // the CR's line end, written CRLF
		}
	}
	// A raw string takes its text as written: no backslash joins lines.
	if c.state == cRawDelim || c.state == cRawBody {
		c.raw(b)
		return
	}
	if c.held >= 0 {
		switch b {
		case ' ', '\t', '\f', '\v':
			c.held++
			return
		case '\n', '\r':
			c.held, c.cr = -1, b == '\r'
			return
		}
		c.flushHeld()
	}
	switch b {
	case '\\':
		c.held = 0
	case '\n', '\r':
		// gcc ends a line at CR alone as well (old Mac files): the
		// next #include was read as part of the line before.
		c.newline()
		c.cr = b == '\r'
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
	if c.directive {
		c.emit(c.line)
	}
	c.line, c.lead, c.directive, c.over, c.identLen = c.line[:0], true, false, false, 0
	c.percent = false
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
	case cHeaderName:
		c.put(b)
		if b == '>' {
			c.state = cCode
		}
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
	case b == '<' && c.directive && headerNameNext(c.line):
		c.state = cHeaderName
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
	if c.noRaw || c.identLen == 0 || c.identLen > 3 {
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
		case len(c.delim) == 16 || b == ' ' || b == ')' || b == '\\' || b == '\t' || b == '\v' || b == '\f' || b == '\n' || b == '\r':
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

// headerNameNext says whether a '<' after the directive line so far
// starts a header's name, which gcc reads with no comment in it: the
// name of an #include, #include_next or #import, or of __has_include(
// in a condition.
func headerNameNext(line []byte) bool {
	s := strings.TrimRight(string(line), " \t\f\v\r")
	for _, kw := range []string{"__has_include", "__has_include_next"} {
		if r, ok := strings.CutSuffix(s, "("); ok && strings.HasSuffix(strings.TrimRight(r, " \t\f\v\r"), kw) {
			return true
		}
	}
	s = strings.TrimLeft(strings.TrimPrefix(s, "#"), " \t\f\v\r")
	return s == "include" || s == "include_next" || s == "import"
}

// put adds b to the logical line, if it is a directive.
func (c *cLines) put(b byte) {
	if c.percent {
		c.percent, c.lead = false, false
		if b == ':' {
			c.directive = true
			c.line = append(c.line, '#')
		}
		return
	}
	if c.lead {
		if b == '%' {
			c.percent = true
			return
		}
		switch b {
		case ' ', '\t', '\f', '\v', '\r':
			return
		}
		c.lead, c.directive = false, b == '#'
	}
	if !c.directive || c.over {
		return
	}
	// A run of white space outside a literal or a header's name is as
	// one to gcc: held as one, it cannot push a line past the bound.
	if isBlank(b) && len(c.line) > 0 && isBlank(c.line[len(c.line)-1]) &&
		(c.state == cCode || c.state == cBlockComment || c.state == cLineComment) {
		return
	}
	if len(c.line) >= maxDirectiveLine {
		// Cut, not dropped: its name, and an include's header, come
		// first; an #endif or #elif dropped below #if 0 left the rest
		// of the file skipped.
		c.over = true
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
	// The directive's name ends where its identifier does: #elif(1)
	// opens a group as #elif 1 does.
	name := strings.TrimSpace(string(rest))
	i := 0
	for i < len(name) && isIdentByte(name[i]) {
		i++
	}
	name, cond := name[:i], strings.TrimSpace(name[i:])
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

// includeScan reads C source for its live directive lines (cLines,
// ifZero) in each way gcc may read it, as a recipe's CGO_CFLAGS choose:
// trigraphs ignored or replaced (-std=c11, -trigraphs: ??=include is an
// include, ??/ joins lines), raw strings read or not (not in strict C
// nor gnu89, where an include between R"x( and )x" is followed). Each
// reading's lines go to line: what any includes is followed. A reading
// other than gnu's (plain) is started, from plain's state, where it
// first parts from it, at a trigraph or R": a source with neither
// (nearly every one) is read once.
type includeScan struct {
	line   func(line []byte)
	plain  *cReading
	others []*cReading
	// pending are the readings not started yet.
	pending []cMode
	// held are the bytes at the end of what was fed that a trigraph or
	// an R" may begin with, not yet read.
	held []byte
}

// cMode is a way gcc reads C: with trigraphs, without raw strings.
type cMode struct{ tri, noRaw bool }

type cReading struct {
	cMode
	c *cLines
	z ifZero
	// held: as includeScan's, for the trigraphs of a tri reading.
	held []byte
}

func newIncludeScan(line func(line []byte)) *includeScan {
	s := &includeScan{line: line, pending: []cMode{{tri: true}, {noRaw: true}, {tri: true, noRaw: true}}}
	s.plain = s.reading(cMode{}, nil)
	return s
}

// reading starts a reading in mode m, from from's state (nil: the
// source's start).
func (s *includeScan) reading(m cMode, from *cLines) *cReading {
	r := &cReading{cMode: m}
	emit := func(l []byte) {
		if r.z.live(l) {
			s.line(l)
		}
	}
	if from == nil {
		r.c = newCLines(emit)
		return r
	}
	c := *from
	c.line, c.delim = bytes.Clone(from.line), bytes.Clone(from.delim)
	c.emit, c.noRaw = emit, m.noRaw
	r.c, r.z = &c, s.plain.z
	return r
}

// trigraphs maps a trigraph's third character to what it stands for.
var trigraphs = [256]byte{'=': '#', '/': '\\', '\'': '^', '(': '[', ')': ']', '!': '|', '<': '{', '>': '}', '-': '~'}

// trigraphAt is the index in p of its first trigraph, -1 for none.
func trigraphAt(p []byte) int {
	for i := 0; ; {
		j := bytes.Index(p[i:], []byte("??"))
		if j < 0 {
			return -1
		}
		i += j
		if i+2 < len(p) && trigraphs[p[i+2]] != 0 {
			return i
		}
		i++
	}
}

// rawAt is the index in p of the R of its first R" (or R\, a line
// joined before the quote) that may start a raw string (R, u8R, uR, UR
// or LR its identifier, as far as p shows), -1 for none: "ERROR" starts
// none, and the source is read once more only where one may start.
func rawAt(p []byte) int {
	for i := 0; ; i++ {
		j := bytes.Index(p[i:], []byte(`R"`))
		if k := bytes.Index(p[i:], []byte(`R\`)); k >= 0 && (j < 0 || k < j) {
			j = k
		}
		if j < 0 {
			return -1
		}
		i += j
		k := i // the identifier's start, as far as p shows it
		for k > 0 && i-k < 3 && isIdentByte(p[k-1]) {
			k--
		}
		if k == 0 && i < 3 {
			return i // what comes before is not in p
		}
		if k > 0 && isIdentByte(p[k-1]) {
			continue // longer than any prefix
		}
		switch string(p[k:i]) {
		case "", "u8", "u", "U", "L":
			return i
		}
	}
}

// trailingQuestions is how many of p's last bytes, at most 2, are '?'.
func trailingQuestions(p []byte) int {
	n := 0
	for n < 2 && n < len(p) && p[len(p)-1-n] == '?' {
		n++
	}
	return n
}

func (s *includeScan) feed(p []byte) {
	if len(s.held) > 0 {
		p = append(s.held, p...)
		s.held = nil
	}
	if len(s.pending) > 0 {
		n := trailingQuestions(p)
		if n == 0 && len(p) > 0 && p[len(p)-1] == 'R' {
			n = 1
		}
		p, s.held = p[:len(p)-n], append(s.held, p[len(p)-n:]...)
	}
	for len(s.pending) > 0 {
		atTri, atRaw := trigraphAt(p), rawAt(p)
		parts := func(m cMode) int {
			at := -1
			for _, i := range []int{atTri, atRaw} {
				if i >= 0 && (i == atTri && m.tri || i == atRaw && m.noRaw) && (at < 0 || i < at) {
					at = i
				}
			}
			return at
		}
		first := -1
		for _, m := range s.pending {
			if at := parts(m); at >= 0 && (first < 0 || at < first) {
				first = at
			}
		}
		if first < 0 {
			break
		}
		s.feedAll(p[:first])
		p = p[first:]
		var still []cMode
		for _, m := range s.pending {
			if parts(m) == first {
				s.others = append(s.others, s.reading(m, s.plain.c))
			} else {
				still = append(still, m)
			}
		}
		s.pending = still
	}
	s.feedAll(p)
}

// feedAll gives each reading started p.
func (s *includeScan) feedAll(p []byte) {
	s.plain.c.feed(p)
	for _, r := range s.others {
		if r.tri {
			r.feedTri(p)
		} else {
			r.c.feed(p)
		}
	}
}

// feedTri gives r's lines p with its trigraphs replaced.
func (r *cReading) feedTri(p []byte) {
	if len(r.held) > 0 {
		p = append(r.held, p...)
		r.held = nil
	}
	n := trailingQuestions(p)
	p, r.held = p[:len(p)-n], append(r.held, p[len(p)-n:]...)
	for len(p) > 0 {
		i := trigraphAt(p)
		if i < 0 {
			r.c.feed(p)
			return
		}
		r.c.feed(p[:i])
		r.c.feed([]byte{trigraphs[p[i+2]]})
		p = p[i+3:]
	}
}

// finish ends the source.
func (s *includeScan) finish() {
	held := s.held
	s.held = nil
	s.feedAll(held)
	s.plain.c.finish()
	for _, r := range s.others {
		if r.tri {
			r.c.feed(r.held)
		}
		r.c.finish()
	}
}
